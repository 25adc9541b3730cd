/**
 * What the domain benchmarks share: a migrated scratch database, a scratch instance root,
 * a count of the SQL statements sent to PostgreSQL (every pg client query: BEGIN, locks,
 * the checks' reads, the settle's ledger and report writes), and one job run through the
 * real pipeline (jobs/run-job.ts) without BullMQ, so a batch's figures are its own.
 * Bench-only: nothing here is product code.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createDb, foldReports, runJob, type BatchReport, type Db, type DomainId } from "@reclaim/core";
import { applyMigrations } from "@reclaim/core/src/db/migrate";
import { createEmptyDatabase, jobDeps } from "@reclaim/testkit";
import { statementsSent } from "../support";

export interface Bench {
  db: Db;
  instanceRoot: string;
  run(
    domain: DomainId,
    scope: string,
    options?: { dryRun?: boolean; cursor?: string; instanceRoot?: string; counting?: boolean },
  ): Promise<{ report: BatchReport; queries: number; ms: number }>;
  close(): Promise<void>;
}

export async function openBench(env: Record<string, string> = {}): Promise<Bench> {
  const database = await createEmptyDatabase();
  await applyMigrations(database.url);
  const db = createDb(database.url, { max: 4 });
  const instanceRoot = await mkdtemp(path.join(tmpdir(), "reclaim-bench-"));
  // No BullMQ here: what a job schedules stays in the ledger.
  const deps = jobDeps(db, instanceRoot, env);
  return {
    db,
    instanceRoot,
    async run(domain, scope, options = {}) {
      // Counting one batch's statements: what earlier batches left is folded first, so their
      // fold (due a second after them) is not counted as this batch's.
      if (options.counting) await foldReports(db);
      const before = statementsSent();
      const started = process.hrtime.bigint();
      const report = await runJob(
        { ...deps, instanceRoot: options.instanceRoot ?? instanceRoot },
        {
          id: `bench-${randomUUID()}`,
          data: {
            kind: "sweep",
            domain,
            scope,
            dryRun: options.dryRun ?? false,
            ...(options.cursor ? { cursor: options.cursor } : {}),
          },
          attemptsMade: 0,
          attempts: 1,
          signal: new AbortController().signal,
        },
      );
      return {
        report,
        queries: statementsSent() - before,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
      };
    },
    async close() {
      await db.$disconnect();
      await database.drop();
      await rm(instanceRoot, { recursive: true, force: true });
    },
  };
}

/** Runs `scope` page by page until the sweep says it is done; returns entries examined and time. */
export async function fullPass(bench: Bench, domain: DomainId, scope: string, dryRun: boolean) {
  let cursor: string | undefined;
  let checked = 0;
  let ms = 0;
  let batches = 0;
  do {
    const page = await bench.run(domain, scope, { dryRun, ...(cursor ? { cursor } : {}) });
    if (page.report.error) throw new Error(page.report.error);
    checked += page.report.checked;
    ms += page.ms;
    batches += 1;
    cursor = page.report.nextCursor ?? undefined;
  } while (cursor);
  return { checked, ms, batches };
}

export const perSecond = (n: number, ms: number) => Math.round((n / ms) * 1000);

export interface BatchQueries {
  /** Entries the batch examined (its report's `checked`). */
  entries: number;
  queries: number;
}

/**
 * The SQL statements of one batch must not grow with the entries in it (no N+1). Prints the
 * measurements and the verdict; a batch of more entries that needs more statements, or
 * batches that did not differ in size, fail the bench run (exit code 1).
 */
export function expectFlatQueries(what: string, batches: BatchQueries[]): void {
  const sorted = [...batches].sort((a, b) => a.entries - b.entries);
  const smallest = sorted[0]!;
  const largest = sorted.at(-1)!;
  const sized = largest.entries > smallest.entries;
  const flat = sorted.every((b) => b.queries <= smallest.queries);
  const verdict = !sized
    ? "FAILED: the batches did not differ in size"
    : flat
      ? "ok, flat (no N+1)"
      : "FAILED: grows with the batch (N+1)";
  const measured = sorted.map((b) => `${b.entries} entries: ${b.queries} statements`).join("; ");
  process.stdout.write(`queries per batch, ${what}: ${measured} -> ${verdict}\n`);
  if (!sized || !flat) process.exitCode = 1;
}
