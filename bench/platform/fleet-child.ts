/**
 * One worker process of a benchmark fleet (fleet.ts). Bench-only.
 */
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import pg from "pg";
import { createWorkerService } from "../../apps/worker/src/service";
import { createDb, silentLogger, type AnyDomain, type DomainId, type Logger } from "../../packages/core/src";
import { statementsSent } from "../support";
import {
  BARE_QUEUE,
  FLOOR_QUEUE,
  floorTransaction,
  NOOP_ID,
  noopDomain,
  prismaFloorTransaction,
  type ChildMode,
} from "./fleet";

const mode = process.env.BENCH_CHILD_MODE as ChildMode;
const concurrency = Number(process.env.BENCH_CHILD_CONCURRENCY);
const databaseUrl = process.env.BENCH_CHILD_DATABASE_URL!;
const redisUrl = process.env.BENCH_CHILD_REDIS_URL!;
const prefix = process.env.BENCH_CHILD_PREFIX!;

let finished = 0;
let cpuAtStart: NodeJS.CpuUsage | undefined;
let statementsAtStart = 0;
let reported = 0;
const reporter = setInterval(() => {
  if (finished !== reported) process.send!({ type: "count", count: (reported = finished) });
}, 10);

/** Counts `job.finished` lines: one per job, after its report row is stored. */
function countingLogger(): Logger {
  const logger: Logger = {
    ...silentLogger,
    info: (msg) => {
      if (msg === "job.finished") finished += 1;
    },
    child: () => logger,
  };
  return logger;
}

async function bullWorker(queue: string, process: (data: { companyId: string }) => Promise<unknown>) {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const worker = new Worker(queue, (job) => process(job.data), { connection, prefix, concurrency });
  worker.on("completed", () => (finished += 1));
  await worker.waitUntilReady();
  return async () => {
    await worker.close();
    connection.disconnect();
  };
}

async function start(): Promise<() => Promise<void>> {
  if (mode === "bare") return bullWorker(BARE_QUEUE, async () => ({ ok: true }));
  // pg's default pool size (10), or fewer: three processes at concurrency 32 must stay well
  // below PostgreSQL's max_connections (100), which the tests of others share.
  const poolSize = Math.min(concurrency, 10);
  if (mode === "floor") {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
    const stop = await bullWorker(FLOOR_QUEUE, async ({ companyId }) => {
      await floorTransaction(pool, companyId);
      return { ok: true };
    });
    return async () => {
      await stop();
      await pool.end();
    };
  }
  if (mode === "prisma-floor") {
    const db = createDb(databaseUrl, { max: poolSize });
    const stop = await bullWorker(FLOOR_QUEUE, async ({ companyId }) => {
      await prismaFloorTransaction(db, companyId);
      return { ok: true };
    });
    return async () => {
      await stop();
      await db.$disconnect();
    };
  }
  const service = createWorkerService({
    env: {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      RECLAIM_QUEUE_PREFIX: prefix,
      RECLAIM_WORKER_CONCURRENCY: String(concurrency),
      PAPERCLIP_INSTANCE_ROOT: "/nonexistent",
    },
    domains: new Map<DomainId, AnyDomain>([[NOOP_ID, noopDomain()]]),
    log: countingLogger(),
  });
  await service.start();
  return () => service.stop();
}

start().then(
  (stop) => {
    process.on("message", (message: { type: string }) => {
      if (message.type === "mark") {
        // The warm-up is over: CPU and statements count from here.
        cpuAtStart = process.cpuUsage();
        statementsAtStart = statementsSent();
        process.send!({ type: "marked" });
        return;
      }
      if (message.type !== "stop") return;
      clearInterval(reporter);
      const cpu = process.cpuUsage(cpuAtStart);
      process.send!({
        type: "cpu",
        micros: cpu.user + cpu.system,
        statements: statementsSent() - statementsAtStart,
      });
      void stop().then(() => process.exit(0));
    });
    cpuAtStart = process.cpuUsage();
    statementsAtStart = statementsSent();
    process.send!({ type: "ready" });
  },
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
