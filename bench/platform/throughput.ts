/**
 * End-to-end throughput of no-op domain jobs: the scheduler (POST /v1/events carrying N
 * changes -> ledger -> BullMQ) and worker processes (claim, locked transaction, settle with
 * the report row, next-deadline sync), against two baselines measured in the same run over
 * the same number of worker processes and the same concurrency (fleet.ts):
 *  - bare BullMQ: addBulk of N jobs, processors that return at once;
 *  - the one-transaction floor: the same, each job running one PostgreSQL transaction
 *    (advisory lock + one insert). Target: Reclaim at least 0.7x the floor.
 * Also printed: CPU per job of the worker processes and of this process (producer/scheduler).
 *   npx tsx bench/platform/throughput.ts   (BENCH_JOBS=1000, BENCH_CONCURRENCY=8,32,
 *     BENCH_PROCESSES=1,3, BENCH_REPEAT=1; BENCH_ONLY=floor,reclaim to profile some of them,
 *     BENCH_CPU_PROF=<dir> for the workers' CPU profiles)
 */
import { randomUUID } from "node:crypto";
import { benchEnv, report } from "../support";
import {
  BARE_QUEUE,
  createFloorTable,
  FLOOR_QUEUE,
  freeConnections,
  measure,
  postEvents,
  reclaimConnections,
  startScheduler,
  submitBullmq,
  type ChildMode,
  type Measured,
  type Setup,
} from "./fleet";

const N = Number(process.env.BENCH_JOBS ?? 1000);
const list = (v: string | undefined, d: string) => (v ?? d).split(",").map(Number);
const CONCURRENCY = list(process.env.BENCH_CONCURRENCY, "8,32");
const PROCESSES = list(process.env.BENCH_PROCESSES, "1,3");
const REPEAT = Number(process.env.BENCH_REPEAT ?? 1);

async function reclaim(setup: Setup): Promise<Measured> {
  const scheduler = await startScheduler(setup);
  try {
    return await measure(setup, "reclaim", N, () =>
      postEvents(
        scheduler,
        Array.from({ length: N }, () => randomUUID()),
      ),
    );
  } finally {
    await scheduler.stop();
  }
}

/** The median (of an even count: the mean of the middle two). */
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return Number.isInteger(mid) ? (sorted[mid - 1]! + sorted[mid]!) / 2 : sorted[Math.floor(mid)]!;
};
const only = (mode: ChildMode) => !process.env.BENCH_ONLY || process.env.BENCH_ONLY.includes(mode);
const NONE: Measured = {
  rate: NaN,
  workerCpu: NaN,
  mainCpu: NaN,
  workerStatements: NaN,
  mainStatements: NaN,
};

async function main(): Promise<void> {
  const env = await benchEnv();
  await createFloorTable(env.databaseUrl);
  try {
    for (const processes of PROCESSES) {
      for (const concurrency of CONCURRENCY) {
        const setup = { databaseUrl: env.databaseUrl, prefix: env.prefix, processes, concurrency };
        const runs: { bare: Measured; floor: Measured; reclaim: Measured }[] = [];
        // A fleet that would open more connections than PostgreSQL has left fails its own jobs
        // ("too many clients") and every other client of the shared server: not run.
        const needed = reclaimConnections(setup);
        const free = await freeConnections(env.databaseUrl);
        if (only("reclaim") && needed > free) {
          report(`no-op jobs: ${processes} worker process(es), concurrency ${concurrency}`, {
            "not run": `Reclaim's fleet may open ${needed} PostgreSQL connections; the server has ${free} left`,
          });
          continue;
        }
        for (let r = 0; r < REPEAT; r++) {
          const bare = only("bare")
            ? await measure(setup, "bare", N, submitBullmq(setup, BARE_QUEUE, N))
            : NONE;
          const floor = only("floor")
            ? await measure(setup, "floor", N, submitBullmq(setup, FLOOR_QUEUE, N))
            : NONE;
          runs.push({ bare, floor, reclaim: only("reclaim") ? await reclaim(setup) : NONE });
        }
        type Run = (typeof runs)[number];
        // Each round's ratio too: the machine is shared, rounds differ.
        const ratios = (pick: (r: Run) => Measured) =>
          runs.length > 1
            ? ` (rounds: ${runs.map((r) => (r.reclaim.rate / pick(r).rate).toFixed(3)).join(", ")})`
            : "";
        const ratioFloor = median(runs.map((r) => r.reclaim.rate / r.floor.rate));
        const rates = (pick: (r: Run) => Measured) => runs.map((r) => pick(r).rate.toFixed(0)).join(", ");
        const cpu = (pick: (r: Run) => Measured) =>
          `${median(runs.map((r) => pick(r).workerCpu)).toFixed(0)} workers + ${median(runs.map((r) => pick(r).mainCpu)).toFixed(0)} main`;
        const statements = (pick: (r: Run) => Measured) =>
          `${median(runs.map((r) => pick(r).workerStatements)).toFixed(2)} workers + ${median(runs.map((r) => pick(r).mainStatements)).toFixed(2)} main`;
        report(`no-op jobs: ${processes} worker process(es), concurrency ${concurrency}`, {
          jobs: N,
          runs: runs.length,
          "bare BullMQ jobs/s": rates((r) => r.bare),
          "one-transaction floor jobs/s": rates((r) => r.floor),
          "Reclaim jobs/s": rates((r) => r.reclaim),
          "Reclaim / floor (target >= 0.7)": `${ratioFloor.toFixed(3)} ${ratioFloor >= 0.7 ? "met" : "NOT met"}${ratios((r) => r.floor)}`,
          "Reclaim / bare BullMQ": `${median(runs.map((r) => r.reclaim.rate / r.bare.rate)).toFixed(3)}${ratios((r) => r.bare)}`,
          "CPU µs/job, bare": cpu((r) => r.bare),
          "CPU µs/job, floor": cpu((r) => r.floor),
          "CPU µs/job, Reclaim": cpu((r) => r.reclaim),
          "SQL statements/job, floor": statements((r) => r.floor),
          "SQL statements/job, Reclaim": statements((r) => r.reclaim),
        });
      }
    }
  } finally {
    await env.cleanup();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
