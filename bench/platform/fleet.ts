/**
 * What the platform benchmarks share (bench-only): the no-op domain, and worker processes
 * (fleet-child.ts) that run one of four processors over the same BullMQ queues:
 *  - `bare`:         BullMQ alone, a processor that returns at once;
 *  - `floor`:        BullMQ plus one PostgreSQL transaction per job (advisory lock + one
 *                    insert, a `pg` pool of pg's default size 10, prepared statements): the
 *                    least a durable job that takes a lock and records its outcome can cost;
 *  - `prisma-floor`: the floor's transaction as a Prisma interactive transaction (the same
 *                    two prepared statements on its connection, a pool of the same size): the
 *                    least a job can cost whose check runs in one, as every Reclaim check must;
 *  - `reclaim`:      Reclaim's worker service (createWorkerService) serving the no-op domain.
 * Each child reports how many jobs it finished (Reclaim: `job.finished` log lines, written
 * after the job's report row is stored) to the parent over IPC.
 */
import { fork, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import pg from "pg";
import {
  defineDomain,
  prismaTransaction,
  runStatementIn,
  silentLogger,
  type AnyDomain,
  type Db,
  type DomainId,
} from "../../packages/core/src";
import { createScheduler, type SchedulerService } from "../../apps/scheduler/src/service";
import { processCpu, REDIS_URL, statementsSent, time } from "../support";

/** A reserved id that no real domain implements yet carries the no-op domain. */
export const NOOP_ID: DomainId = "nested-clone-migration";

/** `issue.changed` of company C is due at `dueAt.get(C)` (default: now). */
export function noopDomain(dueAt: ReadonlyMap<string, Date> = new Map()): AnyDomain {
  return defineDomain({
    id: NOOP_ID,
    title: "no-op (benchmark)",
    options: {},
    readConfig: () => ({ enabled: true, dryRun: false }),
    events: {
      "issue.changed": (events, ctx) =>
        events.map((event) => ({
          domain: NOOP_ID,
          scope: event.companyId,
          reason: "bench",
          dueAt: dueAt.get(event.companyId) ?? ctx.now,
        })),
    },
    apply: async (ctx) => ctx.report.examined(),
  });
}

export const FLOOR_QUEUE = "floor";
export const BARE_QUEUE = "bare";

export type ChildMode = "bare" | "floor" | "prisma-floor" | "reclaim";

export interface FleetOptions {
  mode: ChildMode;
  processes: number;
  concurrency: number;
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
}

export interface Fleet {
  /** Jobs finished by all children so far. */
  finished(): number;
  /** Resolves once `n` jobs finished (fails after `timeoutMs`, default 10 minutes). */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  /**
   * Runs WARMUP jobs per process, handed over by `submit(count)`, then counts the children's
   * CPU time and statements from there; resolves with the jobs it ran.
   */
  warmUp(submit: (count: number) => Promise<void>): Promise<number>;
  /** Stops the children: the CPU time (µs) they used and the SQL statements they sent since ready. */
  stop(): Promise<{ cpu: number; statements: number }>;
}

export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const counts = new Map<number, number>();
  let waiting: { n: number; resolve: () => void } | null = null;
  const total = () => [...counts.values()].reduce((a, b) => a + b, 0);
  const children: ChildProcess[] = [];
  const ready: Promise<void>[] = [];
  for (let i = 0; i < options.processes; i++) {
    const child = fork(path.join(__dirname, "fleet-child.ts"), [], {
      execArgv: [
        "--import",
        "tsx",
        ...(process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      ],
      env: {
        ...process.env,
        BENCH_CHILD_MODE: options.mode,
        BENCH_CHILD_CONCURRENCY: String(options.concurrency),
        BENCH_CHILD_DATABASE_URL: options.databaseUrl,
        BENCH_CHILD_REDIS_URL: options.redisUrl,
        BENCH_CHILD_PREFIX: options.prefix,
      },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    children.push(child);
    ready.push(
      new Promise((resolve, reject) => {
        child.on("message", (message: { type: string; count?: number }) => {
          if (message.type === "ready") resolve();
          if (message.type === "count") {
            counts.set(i, message.count!);
            if (waiting && total() >= waiting.n) waiting.resolve();
          }
        });
        child.on("exit", (code) => reject(new Error(`${options.mode} worker exited with ${code}`)));
      }),
    );
  }
  await Promise.all(ready);
  /** The children's CPU time and statements count from now on (after a warm-up). */
  const mark = () =>
    Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            const marked = (message: { type: string }) => {
              if (message.type !== "marked") return;
              child.off("message", marked);
              resolve();
            };
            child.on("message", marked);
            child.send({ type: "mark" });
          }),
      ),
    ).then(() => undefined);
  const fleet: Fleet = {
    finished: total,
    waitFor: (n, timeoutMs = 600_000) =>
      total() >= n
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            const timer = setTimeout(
              () => reject(new Error(`${options.mode}: ${total()} of ${n} jobs finished in ${timeoutMs} ms`)),
              timeoutMs,
            );
            waiting = {
              n,
              resolve: () => {
                clearTimeout(timer);
                resolve();
              },
            };
          }),
    async warmUp(submit) {
      const count = WARMUP * options.processes;
      if (count === 0) return 0;
      await submit(count);
      await fleet.waitFor(count);
      await mark();
      return count;
    },
    async stop() {
      const used = await Promise.all(
        children.map(
          (child) =>
            new Promise<{ cpu: number; statements: number }>((resolve) => {
              const spent = { cpu: 0, statements: 0 };
              child.on("message", (message: { type: string; micros?: number; statements?: number }) => {
                if (message.type !== "cpu") return;
                spent.cpu = message.micros!;
                spent.statements = message.statements!;
              });
              child.removeAllListeners("exit");
              child.on("exit", () => resolve(spent));
              child.send({ type: "stop" });
            }),
        ),
      );
      return {
        cpu: used.reduce((a, b) => a + b.cpu, 0),
        statements: used.reduce((a, b) => a + b.statements, 0),
      };
    },
  };
  return fleet;
}

export interface Setup {
  databaseUrl: string;
  prefix: string;
  processes: number;
  concurrency: number;
}

export interface Measured {
  /** Jobs per second. */
  rate: number;
  /** CPU per job (µs) of the worker processes, and of this process (producer, scheduler). */
  workerCpu: number;
  mainCpu: number;
  /** CPU per job (µs) of the PostgreSQL and Redis servers (processCpu: the whole machine's). */
  postgresCpu: number;
  redisCpu: number;
  /** SQL statements per job (BEGIN and COMMIT included) sent by the workers and by this process. */
  workerStatements: number;
  mainStatements: number;
}

/**
 * Jobs per worker process a fleet runs before it is measured (BENCH_WARMUP): a worker serves
 * for days, so what is measured is its steady state, not its first seconds (V8 compiling the
 * code, connections opening, PostgreSQL planning the statements of each connection). The
 * same for every fleet.
 */
export const WARMUP = Number(process.env.BENCH_WARMUP ?? 1000);

/**
 * Throughput of a fleet of `mode` workers over `n` jobs, after WARMUP jobs not counted;
 * `submit(count)` hands them `count` jobs.
 */
export async function measure(
  setup: Setup,
  mode: ChildMode,
  n: number,
  submit: (count: number) => Promise<void>,
): Promise<Measured> {
  const fleet = await startFleet({ ...setup, mode, redisUrl: REDIS_URL });
  let warmup: number;
  try {
    warmup = await fleet.warmUp(submit);
  } catch (error) {
    await fleet.stop();
    throw error;
  }
  const cpu = process.cpuUsage();
  const servers = { postgres: processCpu("postgres"), redis: processCpu("redis-server") };
  const statements = statementsSent();
  let ms: number;
  let main: NodeJS.CpuUsage;
  let serversUsed: typeof servers;
  let mainStatements: number;
  let workers: { cpu: number; statements: number };
  try {
    ms = (
      await time(async () => {
        await submit(n);
        await fleet.waitFor(warmup + n);
      })
    ).ms;
  } finally {
    main = process.cpuUsage(cpu);
    serversUsed = {
      postgres: processCpu("postgres") - servers.postgres,
      redis: processCpu("redis-server") - servers.redis,
    };
    mainStatements = statementsSent() - statements;
    workers = await fleet.stop();
  }
  return {
    rate: n / (ms / 1000),
    workerCpu: workers.cpu / n,
    mainCpu: (main.user + main.system) / n,
    postgresCpu: serversUsed.postgres / n,
    redisCpu: serversUsed.redis / n,
    workerStatements: workers.statements / n,
    mainStatements: mainStatements / n,
  };
}

/** Hands `n` jobs to the bare or floor fleet: one addBulk, as a producer would. */
export function submitBullmq(setup: Setup, queueName: string): (n: number) => Promise<void> {
  return async (n) => {
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const queue = new Queue(queueName, { connection, prefix: setup.prefix });
    await queue.addBulk(
      Array.from({ length: n }, () => ({
        name: queueName,
        data: { companyId: randomUUID() },
        opts: { removeOnComplete: true, attempts: 3 },
      })),
    );
    await queue.close();
    connection.disconnect();
  };
}

export const BENCH_TOKEN = "bench-token-0123456789";

/** Reclaim's scheduler in this process, serving the no-op domain, ready. */
export async function startScheduler(
  setup: Setup,
  domain: AnyDomain = noopDomain(),
): Promise<SchedulerService> {
  const scheduler = await createScheduler({
    env: {
      DATABASE_URL: setup.databaseUrl,
      REDIS_URL,
      RECLAIM_QUEUE_PREFIX: setup.prefix,
      RECLAIM_API_TOKEN: BENCH_TOKEN,
      PAPERCLIP_INSTANCE_ROOT: "/nonexistent",
    },
    domains: new Map<DomainId, AnyDomain>([[NOOP_ID, domain]]),
    log: silentLogger,
  });
  await scheduler.started;
  return scheduler;
}

/** POSTs one `issue.changed` per company to /v1/events, 1,000 per request (the API's limit). */
export async function postEvents(scheduler: SchedulerService, companies: string[]): Promise<void> {
  for (let at = 0; at < companies.length; at += 1000) {
    const answer = await scheduler.app.inject({
      method: "POST",
      url: "/v1/events",
      headers: { authorization: `Bearer ${BENCH_TOKEN}` },
      payload: {
        events: companies
          .slice(at, at + 1000)
          .map((companyId) => ({ type: "issue.changed", companyId, issueId: randomUUID() })),
      },
    });
    if (answer.statusCode !== 202) throw new Error(answer.body);
  }
}

/** The floor's two statements (prepared). */
const FLOOR_LOCK = {
  name: "floor-lock",
  text: "SELECT pg_advisory_xact_lock(hashtext('bench.floor'), hashtext($1))::text",
};
const FLOOR_INSERT = {
  name: "floor-insert",
  text: "INSERT INTO bench_floor (company_id, finished_at) VALUES ($1, $2)",
};

/** The floor's job body: one transaction taking an advisory lock and inserting one row. */
export async function floorTransaction(pool: pg.Pool, companyId: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query({ ...FLOOR_LOCK, values: [companyId] });
    await client.query({ ...FLOOR_INSERT, values: [companyId, new Date()] });
    await client.query("COMMIT");
  } finally {
    client.release();
  }
}

/**
 * The Prisma floor's job body: the floor's transaction as a Prisma interactive transaction,
 * its statements on the transaction's own connection (runStatementIn), as a check's are.
 */
export function prismaFloorTransaction(db: Db, companyId: string): Promise<void> {
  return prismaTransaction(db, async (tx, client) => {
    await runStatementIn(client ?? tx, FLOOR_LOCK, [companyId]);
    await runStatementIn(client ?? tx, FLOOR_INSERT, [companyId, new Date()]);
  });
}

/** The table the floor's jobs insert into. */
export async function createFloorTable(databaseUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(
    "CREATE TABLE bench_floor (id bigserial PRIMARY KEY, company_id text, finished_at timestamptz)",
  );
  await admin.end();
}

/**
 * PostgreSQL connections a Reclaim fleet may open at once: each worker process's pool is
 * sized concurrency x enabled domains + 4 (apps/worker createDb; one domain here) plus the
 * settlement's own connection, the scheduler's 10 and its fold's one.
 */
export const reclaimConnections = (setup: Pick<Setup, "processes" | "concurrency">) =>
  setup.processes * (setup.concurrency + 5) + 11;

/** Connections the server still accepts (max_connections less those open and those reserved). */
export async function freeConnections(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query<{ free: number }>(
    `SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
            - (SELECT count(*) FROM pg_stat_activity)::int AS free`,
  );
  await client.end();
  return rows[0]!.free;
}
