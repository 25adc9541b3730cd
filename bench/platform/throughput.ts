/**
 * End-to-end throughput of no-op domain jobs through the scheduler (one POST /v1/events
 * carrying N changes -> ledger -> BullMQ) and a worker (claim, locked transaction, settle,
 * report row), against bare BullMQ add + process of N no-op jobs, in the same run.
 *   npx tsx bench/platform/throughput.ts        (BENCH_JOBS=1000, BENCH_CONCURRENCY=8)
 */
import { randomUUID } from "node:crypto";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { createDb, defineDomain, silentLogger, type AnyDomain, type DomainId } from "../../packages/core/src";
import { createScheduler } from "../../apps/scheduler/src/service";
import { createWorkerService } from "../../apps/worker/src/service";
import { benchEnv, REDIS_URL, report, time } from "../support";

const N = Number(process.env.BENCH_JOBS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
// A reserved id that no real domain implements yet carries the no-op domain.
const NOOP_ID: DomainId = "nested-clone-migration";

const noop = defineDomain({
  id: NOOP_ID,
  title: "no-op (benchmark)",
  options: {},
  readConfig: () => ({ enabled: true, dryRun: false }),
  events: {
    "issue.changed": (event, ctx) => [
      { domain: NOOP_ID, scope: event.companyId, reason: "bench", dueAt: ctx.now },
    ],
  },
  apply: async (ctx) => ctx.report.examined(),
});

async function bare(prefix: string): Promise<number> {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue("bare", { connection, prefix });
  let done = 0;
  let finish!: () => void;
  const all = new Promise<void>((resolve) => (finish = resolve));
  const workerConnection = connection.duplicate();
  const worker = new Worker("bare", async () => ({ ok: true }), {
    connection: workerConnection,
    prefix,
    concurrency: CONCURRENCY,
  });
  worker.on("completed", () => ++done === N && finish());
  await worker.waitUntilReady();
  const { ms } = await time(async () => {
    await queue.addBulk(
      Array.from({ length: N }, (_, i) => ({ name: "noop", data: { i }, opts: { removeOnComplete: true } })),
    );
    await all;
  });
  await worker.close();
  await queue.close();
  workerConnection.disconnect();
  connection.disconnect();
  return ms;
}

async function reclaim(databaseUrl: string, prefix: string): Promise<{ ms: number; enqueueMs: number }> {
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    RECLAIM_QUEUE_PREFIX: prefix,
    RECLAIM_API_TOKEN: "bench-token-0123456789",
    RECLAIM_WORKER_CONCURRENCY: String(CONCURRENCY),
    PAPERCLIP_INSTANCE_ROOT: "/nonexistent",
  };
  const domains = new Map<DomainId, AnyDomain>([[NOOP_ID, noop]]);
  const scheduler = await createScheduler({ env, domains, log: silentLogger });
  const worker = createWorkerService({ env, domains, log: silentLogger });
  await worker.start();
  await scheduler.started;
  const db = createDb(databaseUrl);
  const events = Array.from({ length: N }, () => ({
    type: "issue.changed",
    companyId: randomUUID(),
    issueId: randomUUID(),
  }));
  let enqueueMs = 0;
  const { ms } = await time(async () => {
    const sent = await time(() =>
      scheduler.app.inject({
        method: "POST",
        url: "/v1/events",
        headers: { authorization: `Bearer ${env.RECLAIM_API_TOKEN}` },
        payload: { events },
      }),
    );
    enqueueMs = sent.ms;
    if (sent.value.statusCode !== 202) throw new Error(sent.value.body);
    for (;;) {
      if ((await db.reclaimBatchReport.count()) >= N) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
  await worker.stop();
  await scheduler.stop();
  await db.$disconnect();
  return { ms, enqueueMs };
}

async function main(): Promise<void> {
  const env = await benchEnv();
  try {
    const bareMs = await bare(env.prefix);
    const r = await reclaim(env.databaseUrl, env.prefix);
    report("no-op jobs: scheduler + worker vs bare BullMQ", {
      jobs: N,
      "worker concurrency": CONCURRENCY,
      "bare BullMQ jobs/s": (N / (bareMs / 1000)).toFixed(0),
      "Reclaim jobs/s": (N / (r.ms / 1000)).toFixed(0),
      "  of which scheduling N events (ms)": r.enqueueMs.toFixed(0),
      "Reclaim / bare throughput ratio": (bareMs / r.ms).toFixed(3),
    });
  } finally {
    await env.cleanup();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
