/**
 * POST /v1/companies/:companyId/execution-workspaces/:workspaceId/reopen {reason}: the
 * Paperclip server asks, before a run uses a closed workspace or when a comment or an agent
 * update arrives on its issue, for the workspace to be restored. The reopen runs on a worker
 * (the host that holds the instance directory) under the same locks as expiration:
 * `202 {jobId}` at once, or with `?wait=<seconds>` (at most 120) `200 {jobId, outcome, path,
 * warning?, restorePointId?, reason?}` once it finished within that time (else `202 {jobId}`;
 * `GET /v1/jobs/:jobId` answers later). `outcome` `failed` means the run must not start in a
 * new workspace; `fresh` means the saved files had expired and `warning` is the text of the
 * system comment to post on the issue.
 */
import {
  MAX_REOPEN_WAIT_SECONDS,
  REOPEN_OUTCOMES,
  REOPEN_REASONS,
  ReclaimError,
  workspaceRows,
} from "@reclaim/core";
import { z } from "zod";
import { route } from "../route";
import { errorBody } from "../schemas";

export const reopenResult = z.object({
  outcome: z.enum(REOPEN_OUTCOMES),
  path: z.string().nullable().describe("The workspace's directory"),
  restorePointId: z.uuid().optional(),
  warning: z.string().optional().describe("fresh: the text of the system comment to post on the issue"),
  reason: z.string().optional().describe("failed: why (a stable code)"),
});

export const reopenRoute = route({
  method: "POST",
  url: "/v1/companies/:companyId/execution-workspaces/:workspaceId/reopen",
  operationId: "reopenExecutionWorkspace",
  summary: "Reopen a closed execution workspace, restoring it from its restore point",
  params: z.object({ companyId: z.uuid(), workspaceId: z.uuid() }),
  query: z.object({
    wait: z.coerce
      .number()
      .int()
      .min(0)
      .max(MAX_REOPEN_WAIT_SECONDS)
      .optional()
      .describe(`Seconds to wait for the result (0 to ${MAX_REOPEN_WAIT_SECONDS})`),
  }),
  body: z.object({ reason: z.enum(REOPEN_REASONS) }),
  responses: {
    200: reopenResult.extend({ jobId: z.string() }),
    202: z.object({ jobId: z.string() }),
    400: errorBody,
    404: errorBody,
  },
  async handle({ params, query, body }, deps) {
    const rows = await workspaceRows(deps.db, params.companyId, [params.workspaceId]);
    if (!rows.has(params.workspaceId)) {
      throw new ReclaimError("RECLAIM_ERR_WORKSPACE_NOT_FOUND", {
        message: `workspaceId: no execution workspace ${params.workspaceId} in company ${params.companyId}`,
        field: "workspaceId",
      });
    }
    const waitSeconds = query.wait ?? 0;
    const jobId = await deps.reopens.enqueue(
      { companyId: params.companyId, workspaceId: params.workspaceId, reason: body.reason },
      { listen: waitSeconds > 0 },
    );
    const result = waitSeconds > 0 ? await deps.reopens.waitForResult(jobId, waitSeconds * 1000) : null;
    return result ? { status: 200, body: { jobId, ...result } } : { status: 202, body: { jobId } };
  },
});
