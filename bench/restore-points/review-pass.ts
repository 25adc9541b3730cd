/**
 * Benchmark: one review pass of the restore-point retention worker over 100,000 restore
 * points in 10,000 issue trees (dataset.ts), all due at once, as after a mass issue change.
 *
 *   npx tsx bench/restore-points/review-pass.ts [--companies 100]
 *
 * `--companies 1` puts all 100,000 in one company: the batch queries must stay index ranges
 * (a per-batch cost that grew with the company's due rows would show here).
 * Each company is worked through the real job pipeline (`runJob`: prepare, locked apply,
 * finish, settle with its report row) in batches of 50 until nothing is due, as its
 * "continue" deadlines would do. Prints the pass's wall time, batches, SQL statements sent
 * (every statement on the worker's connections, BEGIN/COMMIT and locks included: counted
 * by wrapping pg's Client#query) and per-batch latency. Needs PostgreSQL and Redis
 * (scripts/bootstrap.sh starts them).
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import {
  createDb,
  createRedis,
  DeadlineQueues,
  domainRegistry,
  FaultPoints,
  readDomainConfigs,
  runJob,
  silentLogger,
  systemClock,
} from "../../packages/core/src";
import { deleteKeys, TEST_REDIS_URL, uniquePrefix } from "../../packages/testkit/src/redis";
import { createDataset, numberArg, percentiles } from "./dataset";

const DOMAIN = "restore-point-retention";

let statements = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
  statements += 1;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pg.Client.prototype.query;

async function main(): Promise<void> {
  const setupStarted = performance.now();
  const data = await createDataset(numberArg("companies", 100));
  const instanceRoot = await mkdtemp(path.join(os.tmpdir(), "reclaim-bench-"));
  const prefix = uniquePrefix();
  const db = createDb(data.url, { max: 4 });
  const redis = createRedis(TEST_REDIS_URL);
  const queues = new DeadlineQueues({ db, redis, prefix, clock: systemClock, attempts: 1 });
  const env = { DATABASE_URL: data.url, PAPERCLIP_INSTANCE_ROOT: instanceRoot };
  const { configs } = readDomainConfigs(domainRegistry, env);
  const deps = {
    db,
    queues,
    clock: systemClock,
    instanceRoot,
    log: silentLogger,
    faults: FaultPoints.none(),
    configs,
    domains: domainRegistry,
  };
  console.log(`data set ready in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`);

  try {
    await db.$queryRawUnsafe("SELECT 1"); // connect before counting
    const batchMs: number[] = [];
    let checked = 0;
    statements = 0;
    const started = performance.now();
    for (const company of data.companies) {
      for (;;) {
        const t0 = performance.now();
        const report = await runJob(deps, {
          id: `bench--${randomUUID()}`,
          data: { kind: "sweep", domain: DOMAIN, scope: company },
          attemptsMade: 0,
          attempts: 1,
          signal: new AbortController().signal,
        });
        batchMs.push(performance.now() - t0);
        checked += report.checked;
        if (report.checked < 50) break;
      }
    }
    const seconds = (performance.now() - started) / 1000;
    const sent = statements;

    const { rows } = await data.client.query<{ state: string; n: string }>(
      `SELECT CASE WHEN delete_after IS NULL THEN 'cleared (open tree)'
                   WHEN delete_after > now() THEN 'expiry set (closed tree)' ELSE 'still due' END AS state,
              count(*)::text AS n
         FROM execution_workspace_restore_points GROUP BY 1 ORDER BY 1`,
    );
    const latency = percentiles(batchMs);
    console.log(
      `review pass: ${checked} restore points in ${batchMs.length} batches (${data.companies.length} companies)`,
    );
    console.log(
      `  wall time       ${seconds.toFixed(2)} s (${Math.round(checked / seconds)} restore points/s)`,
    );
    console.log(
      `  SQL statements  ${sent} (${(sent / batchMs.length).toFixed(1)} per batch, ${(sent / checked).toFixed(2)} per restore point)`,
    );
    console.log(
      `  batch latency   mean ${latency.mean.toFixed(1)} ms, p50 ${latency.p50.toFixed(1)} ms, p95 ${latency.p95.toFixed(1)} ms`,
    );
    for (const r of rows) console.log(`  ${r.state.padEnd(26)} ${r.n}`);
  } finally {
    await queues.close();
    await redis.quit().catch(() => redis.disconnect());
    await db.$disconnect();
    await data.drop();
    await deleteKeys(prefix);
    await rm(instanceRoot, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
