/** Fixtures for native workspace sync tests: real folders, real rows. */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { daysAgo, waitFor, writeTree, type Stack } from "@reclaim/testkit";
import type { BatchReport, Prisma, ReportEntry } from "@reclaim/core";

export const DOMAIN = "native-workspace-sync";

type Instance = Pick<Stack, "instanceRoot">;

export function syncRoot(stack: Instance): string {
  return path.join(stack.instanceRoot, "native-workspace-sync");
}

/** A sync folder with a descriptor, a manifest and a seed archive, all `ageDays` old. */
export async function makeFolder(stack: Instance, runId: string, ageDays = 10, seedBytes = 64 * 1024): Promise<string> {
  const dir = path.join(syncRoot(stack), runId);
  await writeTree(
    dir,
    { "descriptor.json": JSON.stringify({ runId }), "manifest.json": "{}", "seeds/workspace.tar": seedBytes },
    daysAgo(ageDays),
  );
  return dir;
}

export interface RunFixture {
  id?: string;
  companyId: string;
  status?: string;
  finishedDaysAgo?: number | null;
  /** Write context_snapshot.nativeWorkspaceSync naming this folder (and a lease). */
  syncRef?: boolean | { leaseId: string };
  process?: { pid: number | null; processGroupId?: number | null; startedAt: Date | null };
}

export async function insertRun(stack: Pick<Stack, "db">, fixture: RunFixture): Promise<string> {
  const id = fixture.id ?? randomUUID();
  const ref = fixture.syncRef;
  const snapshot: Prisma.InputJsonValue | undefined =
    ref === undefined || ref === false
      ? undefined
      : { issueId: randomUUID(), nativeWorkspaceSync: { runId: id, ...(typeof ref === "object" ? ref : {}) } };
  const finished = fixture.finishedDaysAgo === undefined ? 9 : fixture.finishedDaysAgo;
  await stack.db.heartbeatRun.create({
    data: {
      id,
      companyId: fixture.companyId,
      status: fixture.status ?? "succeeded",
      startedAt: daysAgo(12),
      finishedAt: finished === null ? null : daysAgo(finished),
      ...(snapshot ? { contextSnapshot: snapshot } : {}),
      processPid: fixture.process?.pid ?? null,
      processGroupId: fixture.process?.processGroupId ?? null,
      processStartedAt: fixture.process?.startedAt ?? null,
    },
  });
  return id;
}

/** Runs a requested sweep of one company through the worker; returns its report. */
export async function sweep(stack: Stack, companyId: string | null, body: Record<string, unknown> = {}) {
  const started = await stack.api("POST", "/v1/sweeps", { domain: DOMAIN, companyId, ...body });
  expect(started.status).toBe(202);
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

export function reasonOf(report: Awaited<ReturnType<typeof sweep>>, runId: string): string | undefined {
  // The last entry for a folder is its final outcome (a candidate is followed by "removed").
  const entry = report.entries.filter((e) => e.id === `native-workspace-sync/${runId}`).at(-1);
  return entry?.outcome === "skipped" ? entry.reason : entry?.outcome;
}
