/**
 * Benchmark: a deletion backlog, as after a big company was deleted: 100,000
 * `delete_requested` restore points in one company (dataset.ts, all in one company, then
 * marked for deletion with distinct request times), worked off by the retention worker in
 * batches of 50 until none is left.
 *
 *   npx tsx bench/restore-points/deletion-backlog.ts [--rows 100000]
 *
 * Rows that became `deleted` leave dead entries at the head of the partial index the batch
 * reads (they were the oldest) until VACUUM removes them; the pass runs without VACUUM (as
 * with autovacuum off), so the last batches show what those entries cost.
 *
 * Storage is local_disk whose objects are absent (harness.ts): the provider's delete runs
 * for real and confirms the absence, so the figures are the ledger's cost, not a disk's.
 * Before the pass it prints the plans (EXPLAIN ANALYZE) of the two queries a batch runs
 * over the whole backlog, due-work.sql and next-due.sql, which must be index ranges (a
 * per-batch cost that grows with the backlog would show as a sort or a sequential scan);
 * then per-batch latency, first batches against last batches, and SQL statements per batch.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { createDataset, numberArg, percentiles } from "./dataset";
import { BATCH, startBenchWorker, statementsSent, timeStatements } from "./harness";

const SQL_DIR = path.join(__dirname, "../../packages/core/src/domains/restore-point-retention");
const COMPARED = 20;

async function main(): Promise<void> {
  const setupStarted = performance.now();
  const data = await createDataset(1);
  const company = data.companies[0]!;
  const rows = numberArg("rows", 100_000);
  // Oldest request first, 100 ms apart (all in the past), as the deletions were requested.
  await data.client.query(
    `WITH chosen AS (
       SELECT id, row_number() OVER (ORDER BY id) AS n FROM execution_workspace_restore_points LIMIT $1)
     UPDATE execution_workspace_restore_points rp
        SET status = 'delete_requested', delete_after = NULL, retry_at = NULL,
            updated_at = now() - interval '1 day' + chosen.n * interval '100 milliseconds'
       FROM chosen WHERE rp.id = chosen.id`,
    [rows],
  );
  await data.client.query("DELETE FROM execution_workspace_restore_points WHERE status = 'active'");
  await data.client.query("VACUUM ANALYZE execution_workspace_restore_points");
  const worker = await startBenchWorker(data);
  console.log(`data set ready in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`);

  try {
    const now = new Date(Date.now() + 60_000);
    const pendingBefore = new Date(now.getTime() - 3600_000);
    for (const [file, params] of [
      ["due-work.sql", [company, now, pendingBefore, BATCH]],
      ["next-due.sql", [company, now, pendingBefore]],
    ] as const) {
      const sql = readFileSync(path.join(SQL_DIR, file), "utf8");
      const plan = await data.client.query<{ "QUERY PLAN": string }>(
        `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`,
        [...params],
      );
      console.log(`plan of ${file} over ${rows} due deletions:`);
      for (const line of plan.rows) console.log(`    ${line["QUERY PLAN"]}`);
    }

    const queryMs = new Map(
      (["due-work.sql", "next-due.sql"] as const).map((file) => {
        const firstLine = readFileSync(path.join(SQL_DIR, file), "utf8").split("\n")[0]!;
        return [file, timeStatements(firstLine)];
      }),
    );
    const batchMs: number[] = [];
    let deleted = 0;
    const sentBefore = statementsSent();
    const started = performance.now();
    for (;;) {
      const batch = await worker.batch(company);
      batchMs.push(batch.ms);
      deleted += batch.checked;
      if (batch.checked < BATCH) break;
    }
    const seconds = (performance.now() - started) / 1000;
    const sent = statementsSent() - sentBefore;
    const left = await data.client.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM execution_workspace_restore_points WHERE status <> 'deleted'",
    );

    const all = percentiles(batchMs);
    const first = percentiles(batchMs.slice(0, COMPARED));
    const last = percentiles(batchMs.slice(-COMPARED - 1, -1)); // the final, short batch aside
    const fmt = (p: ReturnType<typeof percentiles>) =>
      `mean ${p.mean.toFixed(1)} ms, p50 ${p.p50.toFixed(1)} ms, p95 ${p.p95.toFixed(1)} ms`;
    console.log(`deletion backlog: ${deleted} restore points in ${batchMs.length} batches (1 company)`);
    console.log(
      `  wall time             ${seconds.toFixed(2)} s (${Math.round(deleted / seconds)} restore points/s)`,
    );
    console.log(
      `  SQL statements        ${sent} (${(sent / batchMs.length).toFixed(1)} per batch, ${(sent / deleted).toFixed(2)} per restore point)`,
    );
    console.log(`  batch latency, all    ${fmt(all)}`);
    console.log(`  first ${COMPARED} batches      ${fmt(first)}`);
    console.log(`  last ${COMPARED} full batches  ${fmt(last)}`);
    for (const [file, samples] of queryMs) {
      const head = percentiles(samples.slice(0, COMPARED));
      const tail = percentiles(samples.slice(-COMPARED - 1, -1));
      console.log(
        `  ${file.padEnd(14)} ${samples.length} runs: first ${COMPARED} mean ${head.mean.toFixed(2)} ms, last ${COMPARED} mean ${tail.mean.toFixed(2)} ms`,
      );
    }
    console.log(`  rows not deleted      ${left.rows[0]!.n}`);
  } finally {
    await worker.close();
    await data.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
