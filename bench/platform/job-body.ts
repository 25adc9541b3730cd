/**
 * The worker's side of a no-op job, without BullMQ or the scheduler, in this one process:
 * CPU per job of Reclaim's job body (runJob: claim under the lock in the Prisma interactive
 * transaction, settle with the report row) against the one-transaction floor's body (advisory
 * lock + one insert on a `pg` pool), and against pieces of Reclaim's body, so the cost of
 * each piece shows. Rounds alternate between the variants (the machine is noisy).
 *   npx tsx bench/platform/job-body.ts   (BENCH_JOBS=1000 per round, BENCH_ROUNDS=5,
 *     BENCH_CONCURRENCY=8, BENCH_VARIANTS=floor,reclaim,...; BENCH_CPU_PROFILE=<dir>: a CPU profile
 *     of each variant's rounds, support.ts)
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import pg from "pg";
import {
  createDb,
  FaultPoints,
  poolOf,
  prismaTransaction,
  pgTransaction,
  requestDeadlines,
  runJob,
  silentLogger,
  systemClock,
  type AnyDomain,
  type DeadlineQueues,
  type DomainControls,
  type DomainId,
} from "../../packages/core/src";
import { lockAndClaim } from "../../packages/core/src/ledger";
import { benchEnv, median, profiled, report } from "../support";
import { createFloorTable, floorTransaction, NOOP_ID, noopDomain } from "./fleet";

const N = Number(process.env.BENCH_JOBS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);

/** CPU (µs) used so far by the PostgreSQL backends serving `databaseUrl`'s database. */
async function backendCpu(admin: pg.Pool, seen: Map<number, number>): Promise<number> {
  const { rows } = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
  );
  const ticks = 1_000_000 / 100;
  for (const { pid } of rows) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      seen.set(pid, (Number(fields[11]) + Number(fields[12])) * ticks);
    } catch {
      // Ended meanwhile: its last reading stands.
    }
  }
  return [...seen.values()].reduce((a, b) => a + b, 0);
}

/** Runs `n` bodies, `CONCURRENCY` at a time; CPU µs per body and bodies per second. */
async function drive(n: number, body: (i: number) => Promise<unknown>) {
  let next = 0;
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await body(next++);
    }),
  );
  const used = process.cpuUsage(cpu);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { cpu: (used.user + used.system) / n, rate: n / (ms / 1000) };
}

async function main(): Promise<void> {
  const env = await benchEnv();
  await createFloorTable(env.databaseUrl);
  const pool = new pg.Pool({ connectionString: env.databaseUrl, max: Math.min(CONCURRENCY, 10) });
  const db = createDb(env.databaseUrl, { max: CONCURRENCY + 4 });
  // The database is dropped WITH (FORCE) at the end: idle connections then report an error.
  for (const p of [pool, poolOf(db)]) p.on("error", () => undefined);
  const domain: AnyDomain = noopDomain();
  const configs = new Map<DomainId, DomainControls>([[NOOP_ID, { enabled: true, dryRun: false }]]);
  const queues = { syncSoon: () => undefined, syncManySoon: () => undefined } as unknown as DeadlineQueues;
  const deps = {
    db,
    queues,
    clock: systemClock,
    instanceRoot: "/nonexistent",
    log: silentLogger,
    faults: FaultPoints.none(),
    configs,
    domains: new Map<DomainId, AnyDomain>([[NOOP_ID, domain]]),
  };
  const scopes = () => Array.from({ length: N }, () => randomUUID());
  const due = async (companies: string[]) => {
    for (let at = 0; at < companies.length; at += 500)
      await requestDeadlines(
        db,
        companies
          .slice(at, at + 500)
          .map((scope) => ({ domain: NOOP_ID, scope, reason: "bench", dueAt: new Date() })),
        new Date(),
      );
  };
  const signal = new AbortController().signal;
  const variants: Record<
    string,
    { setup?: (c: string[]) => Promise<void>; body: (c: string) => Promise<unknown> }
  > = {
    floor: {
      body: (companyId) => floorTransaction(pool, companyId),
    },
    reclaim: {
      setup: due,
      body: (scope) =>
        runJob(deps, {
          id: `deadline:${scope}`,
          data: { kind: "deadline", domain: NOOP_ID, scope, dueAt: new Date().toISOString() },
          attemptsMade: 0,
          attempts: 3,
          signal,
        }),
    },
    /** Prisma's interactive transaction around the lock-and-claim, nothing else. */
    "prisma-tx": {
      setup: due,
      body: (scope) =>
        prismaTransaction(db, (tx, client) =>
          lockAndClaim(
            client ?? tx,
            { namespace: "bench", key: scope },
            { domain: NOOP_ID, scope },
            new Date(),
          ),
        ),
    },
    /** The same on a plain pg transaction of the same pool. */
    "pg-tx": {
      setup: due,
      body: (scope) =>
        pgTransaction(db, (client) =>
          lockAndClaim(client, { namespace: "bench", key: scope }, { domain: NOOP_ID, scope }, new Date()),
        ),
    },
  };
  const chosen = (process.env.BENCH_VARIANTS ?? Object.keys(variants).join(",")).split(",");
  const results = new Map<string, { cpu: number[]; pg: number[]; rate: number[] }>(
    chosen.map((v) => [v, { cpu: [], pg: [], rate: [] }]),
  );
  const admin = new pg.Pool({ connectionString: env.databaseUrl, max: 1 });
  admin.on("error", () => undefined);
  const seen = new Map<number, number>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of chosen) {
        const variant = variants[name]!;
        const companies = scopes();
        await variant.setup?.(companies);
        const pgBefore = await backendCpu(admin, seen);
        const r = await profiled(`${name}-${round}`, () => drive(N, (i) => variant.body(companies[i]!)));
        await new Promise((resolve) => setTimeout(resolve, 50));
        const pgUsed = (await backendCpu(admin, seen)) - pgBefore;
        results.get(name)!.cpu.push(r.cpu);
        results.get(name)!.pg.push(pgUsed / N);
        results.get(name)!.rate.push(r.rate);
      }
    }
    const floorCpu = median(results.get("floor")?.cpu ?? [NaN]);
    report(`job bodies in one process, concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${N}`, {
      ...Object.fromEntries(
        [...results].map(([name, r]) => [
          name,
          `CPU ${median(r.cpu).toFixed(0)} µs/job (x${(median(r.cpu) / floorCpu).toFixed(2)} floor) + PostgreSQL ${median(r.pg).toFixed(0)}, ${median(r.rate).toFixed(0)} jobs/s`,
        ]),
      ),
    });
  } finally {
    await pool.end();
    await admin.end();
    await db.$disconnect();
    await env.cleanup();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
