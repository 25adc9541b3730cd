/**
 * Native workspace sync folders evaluated per second: 10,000 folders of 20 companies (a third
 * of them of running runs, kept; the rest of runs settled nine days ago, removable), judged
 * through the real pipeline (start-up discovery, company jobs, continuations of full
 * batches), twice, each against its baseline measured in the same run:
 *   - dry run, against the bare filesystem survey of the same folders (readdir of the top
 *     folder, then an lstat walk of each folder);
 *   - removing, on a fresh copy of the dataset, against the bare survey plus the bare removal
 *     of the folders the pipeline removes (lstat, rename aside, rm -r each), of another fresh
 *     copy.
 * The folders are written more than fs/listings.ts's margin before either pass (a host's
 * folders are older still): the dry run's batches reuse the top folder's listing, the
 * removing pass's rename in it at every batch and read it again.
 * Then the SQL statements of one batch, for two batch sizes, dry run and removing: they must
 * not grow with the batch (no N+1); if they do, the run fails (exit code 1). And the ceiling of
 * a dry-run batch (harness.ts dryBatchCeiling): its statements alone, replayed on a plain
 * connection, against its bare walks.
 *   npx tsx bench/platform/sync-folders.ts        (BENCH_FOLDERS=10000, BENCH_COMPANIES=20;
 *     BENCH_CPU_PROFILE=<dir>: a CPU profile of each pipeline pass, support.ts)
 */
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { lstat, mkdir, mkdtemp, readdir, rename, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { silentLogger, treeStats, UNCHANGED_MARGIN_MS } from "../../packages/core/src";
import { createScheduler } from "../../apps/scheduler/src/service";
import { createWorkerService } from "../../apps/worker/src/service";
import {
  dryBatchCeiling,
  expectFlatQueries,
  openBench,
  printCeiling,
  type BatchQueries,
} from "../domains/harness";
import { benchEnv, profiled, REDIS_URL, report, time } from "../support";

const FOLDERS = Number(process.env.BENCH_FOLDERS ?? 10_000);
const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 20);
const SYNC_DIR = "native-workspace-sync";
const load = () => loadavg()[0]!.toFixed(2);

interface Dataset {
  /** The instance root; its `native-workspace-sync` holds the folders. */
  root: string;
  syncRoot: string;
  /** Folders whose runs are settled and old: what a removing pass removes. */
  removable: string[];
}

/** Runs a multi-row INSERT. */
type Insert = (sql: string) => Promise<unknown>;

async function pgInsert(databaseUrl: string): Promise<{ insert: Insert; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  return { insert: (sql) => client.query(sql), close: () => client.end() };
}

/**
 * `count` sync folders (a descriptor and a seed archive in `seeds/`, ten days old) of
 * `companies` companies under a fresh instance root; with `insert`, their runs: every third
 * one running, the others succeeded nine days ago without a sync reference.
 */
async function seed(count: number, companies: string[], insert?: Insert): Promise<Dataset> {
  const root = await mkdtemp(path.join(tmpdir(), "reclaim-bench-instance-"));
  const syncRoot = path.join(root, SYNC_DIR);
  const old = new Date(Date.now() - 10 * 86_400_000);
  const rows: string[] = [];
  const removable: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = randomUUID();
    const dir = path.join(syncRoot, id);
    await mkdir(path.join(dir, "seeds"), { recursive: true });
    await writeFile(path.join(dir, "descriptor.json"), "{}");
    await writeFile(path.join(dir, "seeds", "workspace.tar"), "x");
    for (const p of ["descriptor.json", "seeds/workspace.tar", "seeds", "."])
      await utimes(path.join(dir, p), old, old);
    const running = i % 3 === 0;
    if (!running) removable.push(id);
    rows.push(
      `('${id}', '${companies[i % companies.length]}', '${running ? "running" : "succeeded"}', now() - interval '9 days')`,
    );
  }
  for (let i = 0; insert && i < rows.length; i += 1000) {
    await insert(
      `INSERT INTO heartbeat_runs (id, company_id, status, finished_at) VALUES ${rows.slice(i, i + 1000).join(",")}`,
    );
  }
  return { root, syncRoot, removable };
}

/** The least filesystem work the rule needs: list the top folder, lstat-walk each folder. */
async function bareSurvey(syncRoot: string): Promise<void> {
  for (const name of await readdir(syncRoot)) await treeStats(path.join(syncRoot, name));
}

/** ... and remove the removable ones as any careful tool would: lstat, rename aside, rm -r. */
async function bareRemoval(syncRoot: string, names: string[]): Promise<void> {
  for (const name of names) {
    const at = path.join(syncRoot, name);
    await lstat(at);
    const aside = path.join(syncRoot, `.expired-${randomUUID()}`);
    await rename(at, aside);
    await rm(aside, { recursive: true });
  }
}

/**
 * The real services over `dataset` until every folder was examined (and, removing, every
 * removable one removed); returns the time and the batches.
 */
async function pipeline(databaseUrl: string, prefix: string, dataset: Dataset, dryRun: boolean) {
  const serviceEnv = {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    RECLAIM_QUEUE_PREFIX: prefix,
    RECLAIM_API_TOKEN: "bench-token-0123456789",
    PAPERCLIP_INSTANCE_ROOT: dataset.root,
    PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN: dryRun ? "true" : "false",
    // Only this domain: the others would share the worker's time.
    PAPERCLIP_SKILL_VERSION_RETENTION_ENABLED: "false",
    PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_ENABLED: "false",
  };
  // The reports are polled on a plain connection: the pipeline runs in this process, and a
  // Prisma aggregate every 50 ms cost ~5% of its main thread (CPU profile, 2026-12-06).
  const poll = new pg.Client({ connectionString: databaseUrl });
  await poll.connect();
  const worker = createWorkerService({ env: serviceEnv, log: silentLogger });
  await worker.start();
  let batches = 0;
  let removed = 0;
  const cpu = process.cpuUsage();
  const ran = await time(async () => {
    const scheduler = await createScheduler({ env: serviceEnv, log: silentLogger });
    await scheduler.started; // start-up discovery is requested here
    for (;;) {
      const { rows } = await poll.query<{ batches: number; checked: number; removed: number }>(
        `SELECT count(*)::int AS batches, COALESCE(sum(checked), 0)::int AS checked,
                COALESCE(sum(removed), 0)::int AS removed
           FROM reclaim_batch_reports WHERE domain = 'native-workspace-sync'`,
      );
      batches = rows[0]!.batches;
      removed = rows[0]!.removed;
      if (rows[0]!.checked >= FOLDERS && (dryRun || removed >= dataset.removable.length)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await scheduler.stop();
  });
  const used = process.cpuUsage(cpu);
  await worker.stop();
  await poll.end();
  return { ms: ran.ms, batches, removed, cpuMs: (used.user + used.system) / 1000 };
}

async function passes(dryRun: boolean): Promise<Record<string, string | number>> {
  const env = await benchEnv();
  const companies = Array.from({ length: COMPANIES }, () => randomUUID());
  const client = await pgInsert(env.databaseUrl);
  const measured = await seed(FOLDERS, companies, client.insert);
  await client.close();
  const bare = dryRun ? measured : await seed(FOLDERS, companies);
  // Folders written long before a sweep, as on a host: the top folder's listing is reused
  // between batches only once its last change is older than the margin (fs/listings.ts).
  await new Promise((resolve) => setTimeout(resolve, UNCHANGED_MARGIN_MS));
  try {
    const loadBefore = load();
    const baseline = await time(async () => {
      await bareSurvey(bare.syncRoot);
      if (!dryRun) await bareRemoval(bare.syncRoot, bare.removable);
    });
    const ran = await profiled(`sync-folders-${dryRun ? "dry" : "removing"}`, () =>
      pipeline(env.databaseUrl, env.prefix, measured, dryRun),
    );
    const left = (await readdir(measured.syncRoot)).length;
    if (!dryRun) {
      // Every removable folder gone, every other one still there.
      if (left !== FOLDERS - measured.removable.length)
        throw new Error(
          `removing pass left ${left} folders, expected ${FOLDERS - measured.removable.length}`,
        );
    }
    const what = dryRun ? "bare survey" : "bare survey + removal";
    return {
      "load average (1 min) before / after": `${loadBefore} / ${load()}`,
      batches: ran.batches,
      ...(dryRun ? {} : { "folders removed (reports say)": `${FOLDERS - left} (${ran.removed})` }),
      [`${what} folders/s`]: (FOLDERS / (baseline.ms / 1000)).toFixed(0),
      "evaluated folders/s (pipeline)": (FOLDERS / (ran.ms / 1000)).toFixed(0),
      "pipeline process CPU / wall (ms)": `${ran.cpuMs.toFixed(0)} / ${ran.ms.toFixed(0)}`,
      [`pipeline / ${what} ratio`]: (baseline.ms / ran.ms).toFixed(3),
    };
  } finally {
    await rm(measured.root, { recursive: true, force: true });
    if (bare !== measured) await rm(bare.root, { recursive: true, force: true });
    await env.cleanup();
  }
}

/**
 * One batch of a company with `size` folders (one in three kept, the others removable: at
 * most 50 candidates, the batch limit, for size <= 150), through the job runner without
 * BullMQ; its statements.
 */
async function statementsPerBatch(): Promise<void> {
  const bench = await openBench();
  try {
    for (const dryRun of [true, false]) {
      const batches: BatchQueries[] = [];
      for (const size of [15, 150]) {
        const company = randomUUID();
        const dataset = await seed(size, [company], (sql) => bench.db.$executeRawUnsafe(sql));
        try {
          const { report, queries } = await bench.run("native-workspace-sync", company, {
            dryRun,
            instanceRoot: dataset.root,
          });
          if (report.error) throw new Error(report.error);
          batches.push({ entries: report.checked, queries });
          process.stdout.write(
            `${dryRun ? "dry-run" : "removing"} batch of ${report.checked} folders (${report.candidates} candidates, ${report.removed} removed): ${queries} SQL statements (job pipeline included)\n`,
          );
        } finally {
          await rm(dataset.root, { recursive: true, force: true });
        }
      }
      expectFlatQueries(dryRun ? "dry run" : "removing", batches);
    }
    // What one dry-run batch (the kept folders before the 51st candidate, and the 50 a batch can
    // lock) could reach with its statements alone, the company's runs among 10,000 as in the passes.
    const company = randomUUID();
    const others = Array.from({ length: 19 }, () => randomUUID());
    const dataset = await seed(FOLDERS, [company, ...others], (sql) => bench.db.$executeRawUnsafe(sql));
    try {
      printCeiling(
        "native workspace sync folders",
        await dryBatchCeiling(bench, "native-workspace-sync", company, { instanceRoot: dataset.root }),
      );
    } finally {
      await rm(dataset.root, { recursive: true, force: true });
    }
  } finally {
    await bench.close();
  }
}

/** BENCH_ONLY=dry|removing|statements runs one part (profiling). */
const only = process.env.BENCH_ONLY;

async function main(): Promise<void> {
  process.stdout.write(`${FOLDERS} folders of ${COMPANIES} companies\n`);
  if (!only || only === "dry")
    report("native workspace sync folders, dry run: pipeline vs bare survey", await passes(true));
  if (!only || only === "removing")
    report("native workspace sync folders, removing: pipeline vs bare survey + removal", await passes(false));
  if (!only || only === "statements") await statementsPerBatch();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
