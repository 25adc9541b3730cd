/** GET /v1/companies/:companyId/restore-points/:id: one restore point (404 in another company). */
import { findRestorePoint, viewOf } from "@reclaim/core";
import { errorBody } from "../schemas";
import { route } from "../route";
import { restorePointsServed } from "./access";
import { restorePointBody, restorePointParams } from "./schemas";

export const getRestorePointRoute = route({
  method: "GET",
  url: "/v1/companies/:companyId/restore-points/:id",
  operationId: "getRestorePoint",
  summary: "Read one restore point",
  params: restorePointParams,
  responses: { 200: restorePointBody, 400: errorBody, 404: errorBody },
  async handle({ params }, deps) {
    restorePointsServed(deps);
    const row = await findRestorePoint(deps.db, params.companyId, params.id);
    return { status: 200, body: { restorePoint: viewOf(row) } };
  },
});
