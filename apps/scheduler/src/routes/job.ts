/**
 * GET /v1/jobs/:jobId: a job's state and, once it ran, its report (with entries). Finished
 * deadline jobs leave the queue at once; their reports stay in PostgreSQL, so the answer
 * comes from there. A reopen job (`reopen--...`) answers with its result instead.
 */
import { echo, isReopenJobId, latestReportOfJob, ReclaimError, storableString } from "@reclaim/core";
import { z } from "zod";
import { domainOfJobId } from "./guards";
import { errorBody, jobState, report } from "./schemas";
import { route } from "./route";
import { reopenResult } from "./workspaces/reopen";

const STATES: Record<string, z.infer<typeof jobState>> = {
  waiting: "waiting",
  prioritized: "waiting",
  "waiting-children": "waiting",
  delayed: "delayed",
  active: "active",
  completed: "completed",
  failed: "failed",
};

export const jobParams = z.object({ jobId: storableString({ min: 1, max: 300 }) });

export async function jobStatus(deps: import("../deps").ApiDeps, jobId: string) {
  const domain = domainOfJobId(jobId);
  const notFound = () =>
    new ReclaimError("RECLAIM_ERR_JOB_NOT_FOUND", {
      message: `jobId: no job ${echo(jobId)}`,
      field: "jobId",
    });
  if (!domain) throw notFound();
  const job = await deps.queues.queue(domain).getJob(jobId);
  const state = job ? STATES[await job.getState()] : undefined;
  // A deadline job's id comes back for every occurrence: until this one has finished, the
  // report stored under its id belongs to an earlier one.
  const finished = state === undefined || state === "completed" || state === "failed";
  const stored = finished ? await latestReportOfJob(deps.db, jobId) : null;
  if (state) return { job, state, report: stored };
  if (!stored) throw notFound();
  return {
    job: undefined,
    state: stored.error ? ("failed" as const) : ("completed" as const),
    report: stored,
  };
}

export const jobRoute = route({
  method: "GET",
  url: "/v1/jobs/:jobId",
  operationId: "getJob",
  summary: "A job's state and report",
  params: jobParams,
  responses: {
    200: z.object({
      jobId: z.string(),
      state: jobState,
      report: report.optional(),
      result: reopenResult.optional().describe("A finished reopen job's result"),
    }),
    404: errorBody,
  },
  async handle({ params }, deps) {
    if (isReopenJobId(params.jobId)) {
      const status = await deps.reopens.status(params.jobId);
      if (!status) {
        throw new ReclaimError("RECLAIM_ERR_JOB_NOT_FOUND", {
          message: `jobId: no job ${echo(params.jobId)}`,
          field: "jobId",
        });
      }
      return { status: 200, body: { jobId: params.jobId, ...status } };
    }
    const { state, report: stored } = await jobStatus(deps, params.jobId);
    return { status: 200, body: { jobId: params.jobId, state, ...(stored ? { report: stored } : {}) } };
  },
});
