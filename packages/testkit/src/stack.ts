/**
 * A whole Reclaim for one test file, in process: its own database (from the migrated
 * template), its own Redis key prefix, a temporary Paperclip instance root, the real
 * scheduler (Fastify, driven with `inject`) and the real worker service (BullMQ workers).
 * `stop()` shuts everything down and removes what it created.
 */
import {
  createDb,
  type Clock,
  type Db,
  type FaultPoints,
  type Logger,
  silentLogger,
  type BatchReport,
} from "@reclaim/core";
import { createScheduler, type SchedulerService } from "@reclaim/scheduler/src/service";
import { createWorkerService, type WorkerService } from "@reclaim/worker/src/service";
import { tempDir } from "./files";
import { createTestDatabase, type TestDatabase } from "./postgres";
import { deleteKeys, TEST_REDIS_URL, uniquePrefix } from "./redis";
import { waitFor } from "./wait";

export const TEST_TOKEN = "test-token-0123456789abcdef";

export interface StackOptions {
  env?: Record<string, string>;
  clock?: Clock;
  faults?: FaultPoints;
  log?: Logger;
  /** Start the worker service (default true). */
  worker?: boolean;
  /** A database prepared by the test (migrated), instead of a clone of the template. */
  database?: TestDatabase;
  /** Runs after the database and instance root exist, before the scheduler starts. */
  seed?: (ctx: { instanceRoot: string; db: Db }) => Promise<void>;
}

export interface ApiResponse {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Record<string, unknown>;
  text: string;
}

export interface Stack {
  env: Record<string, string>;
  db: Db;
  database: TestDatabase;
  instanceRoot: string;
  prefix: string;
  scheduler: SchedulerService;
  worker: WorkerService | null;
  api(
    method: "GET" | "POST",
    url: string,
    body?: unknown,
    options?: { token?: string | null },
  ): Promise<ApiResponse>;
  /** Reports of `domain` (newest first) once `enough` accepts them. */
  waitForReports(
    domain: string,
    enough: (reports: BatchReport[]) => boolean,
    timeoutMs?: number,
  ): Promise<BatchReport[]>;
  startWorker(options?: Pick<StackOptions, "faults" | "env">): Promise<WorkerService>;
  /** Resolves when no domain queue has a waiting or active job (delayed ones may remain). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

export function stackEnv(
  database: TestDatabase,
  prefix: string,
  instanceRoot: string,
  extra: Record<string, string> = {},
) {
  return {
    NODE_ENV: "test",
    DATABASE_URL: database.url,
    REDIS_URL: TEST_REDIS_URL,
    RECLAIM_QUEUE_PREFIX: prefix,
    RECLAIM_API_TOKEN: TEST_TOKEN,
    RECLAIM_PORT: "0",
    RECLAIM_HOST: "127.0.0.1",
    PAPERCLIP_INSTANCE_ROOT: instanceRoot,
    // Short enough that a killed worker's job is retried within a test, long enough that a
    // loaded two-core machine never lets a live job's lock lapse (a duplicate run).
    RECLAIM_JOB_LOCK_MS: "10000",
    RECLAIM_STALLED_INTERVAL_MS: "5000",
    RECLAIM_SHUTDOWN_TIMEOUT_MS: "10000",
    RECLAIM_LOG_LEVEL: "error",
    ...extra,
  };
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const database = options.database ?? (await createTestDatabase());
  const prefix = uniquePrefix();
  const root = await tempDir("reclaim-instance-");
  const env = stackEnv(database, prefix, root.path, options.env);
  const log = options.log ?? silentLogger;
  const db = createDb(database.url, { max: 4 });
  const workers: WorkerService[] = [];
  let started: SchedulerService | null = null;
  // Everything this stack made, released in reverse order: by stop(), and by a start that fails
  // (a refused configuration), so that no database, Redis keys or files are left behind.
  const release = async () => {
    for (const w of workers) await w.stop();
    await started?.stop();
    await db.$disconnect();
    await deleteKeys(prefix);
    await database.drop();
    await root.remove();
  };
  try {
    if (options.seed) await options.seed({ instanceRoot: root.path, db });
    const scheduler = (started = await createScheduler({ env, clock: options.clock, log }));
    const startWorker = async (extra: Pick<StackOptions, "faults" | "env"> = {}) => {
      const worker = createWorkerService({
        env: { ...env, ...extra.env },
        clock: options.clock,
        log,
        faults: extra.faults ?? options.faults,
      });
      await worker.start();
      workers.push(worker);
      return worker;
    };
    const worker = options.worker === false ? null : await startWorker();
    await scheduler.started;
    const idle = () =>
      waitFor(
        async () => {
          for (const id of scheduler.deps.domains.keys()) {
            const c = await scheduler.deps.queues.queue(id).getJobCounts("waiting", "prioritized", "active");
            if ((c.waiting ?? 0) + (c.prioritized ?? 0) + (c.active ?? 0) > 0) return false;
          }
          return true;
        },
        { what: "idle queues" },
      ).then(() => undefined);
    // Start-up checks run before a test begins, so they never race its fixtures.
    if (worker) await idle();

    return {
      env,
      db,
      database,
      instanceRoot: root.path,
      prefix,
      scheduler,
      worker,
      startWorker,
      idle,
      async api(method, url, body, { token = TEST_TOKEN } = {}) {
        const response = await scheduler.app.inject({
          method,
          url,
          ...(body === undefined ? {} : { payload: body as object }),
          headers: token === null ? {} : { authorization: `Bearer ${token}` },
        });
        let parsed: unknown = undefined;
        try {
          parsed = response.json();
        } catch {
          parsed = undefined;
        }
        return { status: response.statusCode, body: parsed, headers: response.headers, text: response.body };
      },
      async waitForReports(domain, enough, timeoutMs = 20_000) {
        return waitFor(
          async () => {
            const rows = await db.reclaimBatchReport.findMany({
              where: { domain },
              orderBy: { finishedAt: "desc" },
            });
            const { toBatchReport } = await import("@reclaim/core");
            const reports = rows.map((r) => toBatchReport(r, true));
            return enough(reports) ? reports : null;
          },
          { timeoutMs, what: `reports of ${domain}` },
        );
      },
      stop: release,
    };
  } catch (error) {
    await release();
    throw error;
  }
}
