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
import {
  createDb,
  foldReports,
  runJob,
  SETTLE_CONNECTION_SETUP,
  SETTLE_JOBS,
  treeStats,
  type BatchReport,
  type Db,
  type DomainId,
} from "@reclaim/core";
import { applyMigrations } from "@reclaim/core/src/db/migrate";
import { createEmptyDatabase, jobDeps } from "@reclaim/testkit";
import pg from "pg";
import { type SentStatement } from "@reclaim/testkit";
import { median, recordStatements, statementsSent } from "../support";

export interface Bench {
  db: Db;
  /** The scratch database's URL. */
  url: string;
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
    url: database.url,
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

/** Transaction control: a replay runs the rest in a transaction of its own. */
const TRANSACTION_CONTROL = /^\s*(BEGIN|START TRANSACTION|COMMIT|ROLLBACK)\b/i;

/**
 * The statements `sent` (recorded from a batch of the real pipeline: support.ts
 * recordStatements) replayed on plain pg connections to `url`, without Prisma, BullMQ or any
 * of Reclaim's JavaScript: the settlement on a connection of its own set up as the worker's
 * (db/client.ts), the others on another, as in the worker. Each round() runs them in one
 * transaction per connection that is rolled back and returns the statements' time (ms), from
 * the first sent to the last answered: a lower bound of the batch's time in PostgreSQL and its
 * round trips (no BEGIN or COMMIT, no commit's WAL flush).
 * Prepared statements are prepared once, at the first round, as on a worker's connections.
 */
export async function replayStatements(url: string, sent: readonly SentStatement[]) {
  const client = new pg.Client({ connectionString: url });
  const settleClient = new pg.Client({ connectionString: url });
  await client.connect();
  await settleClient.connect();
  await settleClient.query(SETTLE_CONNECTION_SETUP);
  const body = sent.filter((s) => !TRANSACTION_CONTROL.test(s.text) && s.text !== SETTLE_CONNECTION_SETUP);
  return {
    /** The statements a round sends. */
    statements: body.length,
    async round(): Promise<number> {
      // Timed: the statements' own round trips, not the transactions' BEGIN and ROLLBACK.
      for (const c of [client, settleClient]) await c.query("BEGIN");
      const started = performance.now();
      for (const s of body) {
        let values = s.values;
        if (s.name === SETTLE_JOBS.name && values) {
          // The settlement: the recorded batch's report rows exist, so each round settles new ones.
          const jobs = (JSON.parse(values[0] as string) as object[]).map((job) => ({
            ...job,
            id: randomUUID(),
            jobId: `replay-${randomUUID()}`,
          }));
          values = [JSON.stringify(jobs), ...values.slice(1)];
        }
        await (s.name === SETTLE_JOBS.name ? settleClient : client).query({
          text: s.text,
          ...(values ? { values } : {}),
          ...(s.name ? { name: s.name } : {}),
        });
      }
      const ms = performance.now() - started;
      for (const c of [client, settleClient]) await c.query("ROLLBACK");
      return ms;
    },
    async close() {
      await client.end();
      await settleClient.end();
    },
  };
}

/** The time (ms) of a bare walk (treeStats) of each of `dirs`, one after another. */
async function walks(dirs: readonly string[]): Promise<number> {
  const started = performance.now();
  for (const dir of dirs) await treeStats(dir);
  return performance.now() - started;
}

/**
 * The most a dry-run batch could reach of the bare survey's speed were all of Reclaim's own
 * work free: one dry-run batch of `scope` through the pipeline, its statements recorded; then,
 * `rounds` times, alternating, its statements alone (replayStatements, after one round that
 * prepares them) and the bare walks of the entries it examined (each entry's id is its path
 * below the instance root). The ceiling is walks / (walks + statements) of the medians: the
 * batch has to send its statements at the least, and nothing else is counted.
 */
export async function dryBatchCeiling(
  bench: Bench,
  domain: DomainId,
  scope: string,
  options: { instanceRoot?: string; rounds?: number } = {},
) {
  const root = options.instanceRoot ?? bench.instanceRoot;
  // A first batch does what a worker process does once (it learns the folders' owners,
  // sets up its connections); the batch recorded is the same one again, as a later batch is.
  await bench.run(domain, scope, { dryRun: true, instanceRoot: root });
  const recorder = recordStatements();
  const ran = await bench
    .run(domain, scope, { dryRun: true, instanceRoot: root })
    .finally(() => recorder.stop());
  const { sent } = recorder;
  if (ran.report.error) throw new Error(ran.report.error);
  const dirs = (ran.report.entries ?? []).map((entry) => path.join(root, entry.id));
  const replay = await replayStatements(bench.url, sent);
  const statementsMs: number[] = [];
  const walksMs: number[] = [];
  try {
    await replay.round();
    for (let round = 0; round < (options.rounds ?? 30); round++) {
      statementsMs.push(await replay.round());
      walksMs.push(await walks(dirs));
    }
  } finally {
    await replay.close();
  }
  const statements = median(statementsMs);
  const walked = median(walksMs);
  return {
    entries: ran.report.checked,
    statements: replay.statements,
    statementsMs: statements,
    walksMs: walked,
    ceiling: walked / (walked + statements),
  };
}

/** Prints dryBatchCeiling's figures. */
export function printCeiling(what: string, c: Awaited<ReturnType<typeof dryBatchCeiling>>): void {
  process.stdout.write(
    `${what}: a dry-run batch of ${c.entries} entries: its ${c.statements} statements (transaction control ` +
      `left out) alone, on plain connections, ${c.statementsMs.toFixed(2)} ms (median) against ${c.walksMs.toFixed(2)} ms of its bare walks ` +
      `-> with nothing else, at most ${c.ceiling.toFixed(3)} of the bare survey's speed\n`,
  );
}
