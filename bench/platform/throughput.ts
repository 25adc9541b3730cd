/**
 * End-to-end throughput of no-op domain jobs: the scheduler (POST /v1/events carrying N
 * changes -> ledger -> BullMQ) and worker processes (claim, locked transaction, settle with
 * the report row, next-deadline sync), against two baselines measured in the same run over
 * the same number of worker processes and the same concurrency (fleet.ts):
 *  - bare BullMQ: addBulk of N jobs, processors that return at once;
 *  - the one-transaction floor: the same, each job running one PostgreSQL transaction
 *    (advisory lock + one insert). Target: Reclaim at least 0.7x the floor;
 *  - the Prisma floor: the floor's transaction as a Prisma interactive transaction, which every
 *    Reclaim check must run in: what the issue's own constraint leaves of the floor, and how
 *    far Reclaim's own work (ledger, report, scheduling) is from it.
 * Also printed: CPU per job of the worker processes and of this process (producer/scheduler).
 *
 * A configuration whose Reclaim fleet may open more PostgreSQL connections than the shared
 * server has left (3 processes at concurrency 32: 3 x 37 + 11 = 122 against max_connections
 * 100) runs, baselines and Reclaim alike, on a private server started for the run
 * (../private-postgres.ts: max_connections for the largest fleet of the run, every other
 * setting copied from the shared server; fsync and synchronous_commit stay on, as there, so
 * its figures compare with the shared server's) and removed at the end. The shared server's
 * configuration is never changed; the others run on it, as before. BENCH_POSTGRES=private
 * runs every configuration on the private server.
 *   npx tsx bench/platform/throughput.ts   (BENCH_JOBS=1000, BENCH_CONCURRENCY=8,32,
 *     BENCH_PROCESSES=1,3, BENCH_REPEAT=1; BENCH_ONLY=floor,reclaim to run some of them (bare,
 *     floor, prisma-floor, reclaim),
 *     BENCH_CPU_PROF=<dir> for the workers' CPU profiles)
 */
import { randomUUID } from "node:crypto";
import { startPrivatePostgres, type PrivatePostgres } from "../private-postgres";
import { ADMIN_URL, benchEnv, median, report, type BenchEnv } from "../support";
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
const ALL_PRIVATE = process.env.BENCH_POSTGRES === "private";
/**
 * The private server's: the largest fleet of the run and room for this process's own clients,
 * at least the shared server's 100.
 */
const PRIVATE_MAX_CONNECTIONS = Math.max(
  100,
  20 +
    Math.max(
      ...PROCESSES.flatMap((processes) =>
        CONCURRENCY.map((c) => reclaimConnections({ processes, concurrency: c })),
      ),
    ),
);

async function reclaim(setup: Setup): Promise<Measured> {
  const scheduler = await startScheduler(setup);
  try {
    return await measure(setup, "reclaim", N, (n) =>
      postEvents(
        scheduler,
        Array.from({ length: n }, () => randomUUID()),
      ),
    );
  } finally {
    await scheduler.stop();
  }
}

const ONLY = process.env.BENCH_ONLY?.split(",");
const only = (mode: ChildMode) => !ONLY || ONLY.includes(mode);
const NONE: Measured = {
  rate: NaN,
  workerCpu: NaN,
  mainCpu: NaN,
  postgresCpu: NaN,
  redisCpu: NaN,
  workerStatements: NaN,
  mainStatements: NaN,
};

async function main(): Promise<void> {
  const env = await benchEnv();
  await createFloorTable(env.databaseUrl);
  // Started when the first configuration needs it, kept for the others that do.
  let server: PrivatePostgres | undefined;
  let privateEnv: Promise<BenchEnv> | undefined;
  const onPrivateServer = () =>
    (privateEnv ??= (async () => {
      server = await startPrivatePostgres({ maxConnections: PRIVATE_MAX_CONNECTIONS, like: ADMIN_URL });
      const own = await benchEnv({ adminUrl: server.adminUrl });
      await createFloorTable(own.databaseUrl);
      return own;
    })());
  try {
    for (const processes of PROCESSES) {
      for (const concurrency of CONCURRENCY) {
        // A fleet that would open more connections than the shared server has left would fail
        // its own jobs ("too many clients") and every other client of that server: the whole
        // configuration runs on the private server.
        const needed = reclaimConnections({ processes, concurrency });
        const free = await freeConnections(env.databaseUrl);
        const shared = !ALL_PRIVATE && !(only("reclaim") && needed > free);
        const { databaseUrl, prefix } = shared ? env : await onPrivateServer();
        const setup = { databaseUrl, prefix, processes, concurrency };
        const postgres = shared
          ? `shared (${free} connections left; Reclaim's fleet may open ${needed})`
          : `private, max_connections ${server!.maxConnections} (the shared server has ${free} connections left; Reclaim's fleet may open ${needed})`;
        const runs: { bare: Measured; floor: Measured; prismaFloor: Measured; reclaim: Measured }[] = [];
        for (let r = 0; r < REPEAT; r++) {
          const bare = only("bare") ? await measure(setup, "bare", N, submitBullmq(setup, BARE_QUEUE)) : NONE;
          const floor = only("floor")
            ? await measure(setup, "floor", N, submitBullmq(setup, FLOOR_QUEUE))
            : NONE;
          const prismaFloor = only("prisma-floor")
            ? await measure(setup, "prisma-floor", N, submitBullmq(setup, FLOOR_QUEUE))
            : NONE;
          runs.push({ bare, floor, prismaFloor, reclaim: only("reclaim") ? await reclaim(setup) : NONE });
        }
        type Run = (typeof runs)[number];
        // Each round's ratio too: the machine is shared, rounds differ.
        const ratios = (pick: (r: Run) => Measured, of: (r: Run) => Measured = (r) => r.reclaim) =>
          runs.length > 1
            ? ` (rounds: ${runs.map((r) => (of(r).rate / pick(r).rate).toFixed(3)).join(", ")})`
            : "";
        const ratioFloor = median(runs.map((r) => r.reclaim.rate / r.floor.rate));
        const rates = (pick: (r: Run) => Measured) => runs.map((r) => pick(r).rate.toFixed(0)).join(", ");
        const cpu = (pick: (r: Run) => Measured) =>
          `${median(runs.map((r) => pick(r).workerCpu)).toFixed(0)} workers + ${median(runs.map((r) => pick(r).mainCpu)).toFixed(0)} main + ${median(runs.map((r) => pick(r).postgresCpu)).toFixed(0)} PostgreSQL + ${median(runs.map((r) => pick(r).redisCpu)).toFixed(0)} Redis`;
        const statements = (pick: (r: Run) => Measured) =>
          `${median(runs.map((r) => pick(r).workerStatements)).toFixed(2)} workers + ${median(runs.map((r) => pick(r).mainStatements)).toFixed(2)} main`;
        report(`no-op jobs: ${processes} worker process(es), concurrency ${concurrency}`, {
          PostgreSQL: postgres,
          jobs: N,
          runs: runs.length,
          "bare BullMQ jobs/s": rates((r) => r.bare),
          "one-transaction floor jobs/s": rates((r) => r.floor),
          "Prisma floor jobs/s": rates((r) => r.prismaFloor),
          "Reclaim jobs/s": rates((r) => r.reclaim),
          "Reclaim / floor (target >= 0.7)": `${ratioFloor.toFixed(3)} ${ratioFloor >= 0.7 ? "met" : "NOT met"}${ratios((r) => r.floor)}`,
          "Prisma floor / floor": `${median(runs.map((r) => r.prismaFloor.rate / r.floor.rate)).toFixed(3)}${ratios(
            (r) => r.floor,
            (r) => r.prismaFloor,
          )}`,
          "Reclaim / Prisma floor": `${median(runs.map((r) => r.reclaim.rate / r.prismaFloor.rate)).toFixed(3)}${ratios((r) => r.prismaFloor)}`,
          "Reclaim / bare BullMQ": `${median(runs.map((r) => r.reclaim.rate / r.bare.rate)).toFixed(3)}${ratios((r) => r.bare)}`,
          "CPU µs/job, bare": cpu((r) => r.bare),
          "CPU µs/job, floor": cpu((r) => r.floor),
          "CPU µs/job, Prisma floor": cpu((r) => r.prismaFloor),
          "CPU µs/job, Reclaim": cpu((r) => r.reclaim),
          "SQL statements/job, floor": statements((r) => r.floor),
          "SQL statements/job, Prisma floor": statements((r) => r.prismaFloor),
          "SQL statements/job, Reclaim": statements((r) => r.reclaim),
        });
      }
    }
  } finally {
    try {
      await env.cleanup();
      await privateEnv?.then(
        (own) => own.cleanup(),
        () => undefined,
      );
    } finally {
      server?.stop();
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
