import type { BatchReport, ReportEntry } from "@reclaim/core";
import type { Stack } from "./stack";
import { waitFor } from "./wait";

/**
 * Runs a requested sweep (POST /v1/sweeps) of one domain and scope through the stack's
 * worker and returns its report, entries included.
 */
export async function sweepDomain(
  stack: Stack,
  domain: string,
  companyId: string | null,
  body: Record<string, unknown> = {},
): Promise<BatchReport & { entries: ReportEntry[] }> {
  const started = await stack.api("POST", "/v1/sweeps", { domain, companyId, ...body });
  if (started.status !== 202) throw new Error(`sweep refused: ${started.status} ${started.text}`);
  const jobId: string = started.body.jobId;
  const done = await waitFor(
    async () => {
      const job = await stack.api("GET", `/v1/jobs/${jobId}`);
      return job.body.state === "completed" || job.body.state === "failed" ? job.body : null;
    },
    { what: `sweep ${jobId}` },
  );
  return done.report as BatchReport & { entries: ReportEntry[] };
}
