/**
 * Benchmark: what the restore-point trigger adds to an issue status change, measured against
 * the same update with the trigger disabled, in the same run, on the same data (dataset.ts:
 * 100,000 issues in 10,000 trees, one active restore point per issue).
 *
 *   npx tsx bench/restore-points/issue-update-cost.ts [--rounds 10] [--per-round 200]
 *
 * Each measured update is one autocommitted `UPDATE issues SET status = ...` of a leaf in a
 * tree not yet touched in that round, so the trigger always does its full work: walk the
 * leaf's two ancestors, lock and mark its three restore points due, and notify. Modes
 * alternate round by round (trigger on, trigger off), and before each round the marks are
 * cleared untimed, so both modes see the same state. A third mode changes issues of a
 * company with no live restore point (the trigger's early exit). A fourth changes, in a
 * trigger-on round, a leaf the round already changed once (as a second status change within
 * a settle window): its three restore points are due already, so the trigger locks them
 * (waiting for any review that holds one) but leaves their time, and notifies. Prints mean / p50 / p95 latency per mode and the ratios
 * to trigger off.
 */
import pg from "pg";
import { createDataset, numberArg, percentiles } from "./dataset";

const ROUNDS = numberArg("rounds", 10);
const PER_ROUND = numberArg("per-round", 200);
const TRIGGER = "reclaim_restore_points_issue_update";

async function main(): Promise<void> {
  const data = await createDataset();
  const client = data.client;
  try {
    // Issues of a company without live restore points, for the early-exit mode.
    await client.query(
      `UPDATE execution_workspace_restore_points SET status = 'deleted', delete_after = NULL
        WHERE company_id = $1::uuid`,
      [data.companies[0]],
    );
    const quiet = data.leaves.filter((l) => l.companyId === data.companies[0]);
    const live = data.leaves.filter((l) => l.companyId !== data.companies[0]);
    const update = new pg.Client({ connectionString: data.url });
    await update.connect();
    const sql =
      "UPDATE issues SET status = CASE WHEN status = 'done' THEN 'todo' ELSE 'done' END WHERE id = $1";
    for (let i = 0; i < 50; i++) await update.query(sql, [live[i]!.id]); // warm up

    const samples: Record<"on" | "off" | "early_exit" | "already_due", number[]> = {
      on: [],
      off: [],
      early_exit: [],
      already_due: [],
    };
    const changed: typeof live = [];
    let markedPerRound = 0;
    let cursor = 0;
    const next = (pool: typeof live) => pool[cursor++ % pool.length]!;
    for (let round = 0; round < ROUNDS * 2; round++) {
      const mode = round % 2 === 0 ? "on" : "off";
      await client.query(
        "UPDATE execution_workspace_restore_points SET delete_after = NULL WHERE status = 'active'",
      );
      await client.query(`ALTER TABLE issues ${mode === "on" ? "ENABLE" : "DISABLE"} TRIGGER ${TRIGGER}`);
      await client.query("VACUUM ANALYZE execution_workspace_restore_points");
      for (let i = 0; i < PER_ROUND; i++) {
        const leaf = next(live);
        const t0 = performance.now();
        await update.query(sql, [leaf.id]);
        samples[mode].push(performance.now() - t0);
        if (mode === "on") changed.push(leaf);
      }
      if (mode === "on") {
        const marked = await client.query<{ n: string }>(
          "SELECT count(*)::text AS n FROM execution_workspace_restore_points WHERE delete_after IS NOT NULL",
        );
        markedPerRound = Number(marked.rows[0]!.n);
        for (let i = 0; i < PER_ROUND / 4; i++) {
          const leaf = quiet[i % quiet.length]!;
          const t0 = performance.now();
          await update.query(sql, [leaf.id]);
          samples.early_exit.push(performance.now() - t0);
        }
        for (const leaf of changed.splice(0).slice(0, PER_ROUND / 4)) {
          const t0 = performance.now();
          await update.query(sql, [leaf.id]);
          samples.already_due.push(performance.now() - t0);
        }
      }
    }
    await client.query(`ALTER TABLE issues ENABLE TRIGGER ${TRIGGER}`);
    await update.end();

    const on = percentiles(samples.on);
    const off = percentiles(samples.off);
    const early = percentiles(samples.early_exit);
    const due = percentiles(samples.already_due);
    const fmt = (p: ReturnType<typeof percentiles>) =>
      `mean ${p.mean.toFixed(3)} ms, p50 ${p.p50.toFixed(3)} ms, p95 ${p.p95.toFixed(3)} ms`;
    console.log(
      `issue status change, ${samples.on.length} updates per mode, ${ROUNDS} rounds each, alternating`,
    );
    console.log(`  trigger off                    ${fmt(off)}`);
    console.log(`  trigger on (3 rows marked)     ${fmt(on)}`);
    console.log(`  trigger on, no live points     ${fmt(early)}`);
    console.log(`  trigger on, rows already due   ${fmt(due)}`);
    console.log(
      `  ratio on/off: mean ${(on.mean / off.mean).toFixed(2)}, p50 ${(on.p50 / off.p50).toFixed(2)}`,
    );
    console.log(`  ratio early-exit/off: p50 ${(early.p50 / off.p50).toFixed(2)}`);
    console.log(
      `  ratio already-due/off: mean ${(due.mean / off.mean).toFixed(2)}, p50 ${(due.p50 / off.p50).toFixed(2)}`,
    );
    console.log(
      `  (each trigger-on round marked ${markedPerRound} restore points due: ${PER_ROUND} updates x 3)`,
    );
  } finally {
    await data.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
