/**
 * Benchmark: one review pass of the restore-point retention worker over 100,000 restore
 * points in 10,000 issue trees (dataset.ts), all due at once, as after a mass issue change.
 *
 *   npx tsx bench/restore-points/review-pass.ts [--companies 100]
 *
 * `--companies 1` puts all 100,000 in one company: the batch queries must stay index ranges
 * (a per-batch cost that grew with the company's due rows would show here).
 * Each company is worked through the real job pipeline (harness.ts) in batches of 50 until
 * nothing is due, as its "continue" deadlines would do. Prints the pass's wall time,
 * batches, SQL statements sent (every statement on the worker's connections, BEGIN/COMMIT
 * and locks included) and per-batch latency. Needs PostgreSQL and Redis
 * (scripts/bootstrap.sh starts them).
 */
import { createDataset, numberArg, percentiles } from "./dataset";
import { BATCH, startBenchWorker, statementsSent } from "./harness";

async function main(): Promise<void> {
  const setupStarted = performance.now();
  const data = await createDataset(numberArg("companies", 100));
  const worker = await startBenchWorker(data);
  console.log(`data set ready in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`);

  try {
    const batchMs: number[] = [];
    let checked = 0;
    const sentBefore = statementsSent();
    const started = performance.now();
    for (const company of data.companies) {
      for (;;) {
        const batch = await worker.batch(company);
        batchMs.push(batch.ms);
        checked += batch.checked;
        if (batch.checked < BATCH) break;
      }
    }
    const seconds = (performance.now() - started) / 1000;
    const sent = statementsSent() - sentBefore;

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
    await worker.close();
    await data.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
