/**
 * GET /v1/companies/:companyId/execution-workspaces/:workspaceId/restore-points: the
 * workspace's restore points, newest first, optionally only some statuses
 * (`?status=active,expiring`); pass `nextCursor` back as `cursor` for the next page.
 */
import { listRestorePoints, RESTORE_POINT_STATUSES, storableString } from "@reclaim/core";
import { z } from "zod";
import { errorBody } from "../schemas";
import { route } from "../route";
import { restorePointsServed } from "./access";
import { restorePoint, workspaceParams } from "./schemas";

const statusList = storableString({ max: 500 })
  .transform((value) => value.split(",").map((s) => s.trim()))
  .pipe(z.array(z.enum(RESTORE_POINT_STATUSES)).min(1));

export const listRestorePointsRoute = route({
  method: "GET",
  url: "/v1/companies/:companyId/execution-workspaces/:workspaceId/restore-points",
  operationId: "listRestorePoints",
  summary: "List a workspace's restore points, newest first",
  params: workspaceParams,
  query: z.object({
    status: statusList.optional().describe("Comma-separated statuses"),
    limit: z.coerce.number().int().min(1).max(500).default(100),
    cursor: storableString({ min: 1, max: 500 }).optional(),
  }),
  responses: {
    200: z.object({ restorePoints: z.array(restorePoint), nextCursor: z.string().nullable() }),
    400: errorBody,
  },
  async handle({ params, query }, deps) {
    restorePointsServed(deps);
    const page = await listRestorePoints(deps.db, {
      companyId: params.companyId,
      executionWorkspaceId: params.workspaceId,
      statuses: query.status,
      limit: query.limit,
      cursor: query.cursor,
    });
    return { status: 200, body: page };
  },
});
