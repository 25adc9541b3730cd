/**
 * POST /v1/jobs/:jobId/cancel: stop a requested sweep. A waiting one is removed; an active
 * one stops between entries and stores a report whose `nextCursor` continues it. Deadline
 * jobs belong to the ledger and cannot be cancelled.
 */
import { parseJobId, ReclaimError } from "@reclaim/core";
import { z } from "zod";
import { jobParams, jobStatus } from "./job";
import { errorBody } from "./schemas";
import { route } from "./route";

export const jobCancelRoute = route({
  method: "POST",
  url: "/v1/jobs/:jobId/cancel",
  operationId: "cancelJob",
  summary: "Cancel a requested sweep",
  params: jobParams,
  responses: {
    200: z.object({ jobId: z.string(), state: z.literal("cancelled") }),
    202: z.object({ jobId: z.string(), state: z.literal("cancelling") }),
    404: errorBody,
    409: errorBody,
  },
  async handle({ params }, deps) {
    const { job, state } = await jobStatus(deps, params.jobId);
    if (parseJobId(params.jobId)?.kind !== "sweep") {
      throw new ReclaimError("RECLAIM_ERR_JOB_NOT_CANCELLABLE", {
        message: "jobId: only requested sweeps can be cancelled; deadline jobs follow the ledger",
        field: "jobId",
      });
    }
    if (job && (state === "waiting" || state === "delayed")) {
      await job.remove();
      return { status: 200, body: { jobId: params.jobId, state: "cancelled" } };
    }
    if (state === "active") {
      await deps.redis.publish(`${deps.queuePrefix}.cancel`, params.jobId);
      return { status: 202, body: { jobId: params.jobId, state: "cancelling" } };
    }
    throw new ReclaimError("RECLAIM_ERR_JOB_NOT_CANCELLABLE", {
      message: `jobId: the job already ${state}`,
      field: "jobId",
    });
  },
});
