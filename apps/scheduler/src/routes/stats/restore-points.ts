/** GET /v1/stats/restore-points: one company's restore points by status. */
import { restorePointsByStatus } from "@reclaim/core";
import { z } from "zod";
import { restorePointsServed } from "../restore-points/access";
import { route } from "../route";
import { errorBody } from "../schemas";

export const statsRestorePointsRoute = route({
  method: "GET",
  url: "/v1/stats/restore-points",
  operationId: "getRestorePointStats",
  summary: "One company's restore points by status: count, bytes, oldest and newest",
  query: z.object({ companyId: z.uuid() }),
  responses: {
    200: z.object({
      statuses: z.array(
        z.object({
          status: z.string(),
          count: z.number().int(),
          bytes: z.number().int(),
          oldest: z.iso.datetime(),
          newest: z.iso.datetime(),
        }),
      ),
    }),
    400: errorBody,
    404: errorBody,
    501: errorBody,
  },
  async handle({ query }, deps) {
    restorePointsServed(deps);
    return { status: 200, body: { statuses: await restorePointsByStatus(deps.db, query.companyId) } };
  },
});
