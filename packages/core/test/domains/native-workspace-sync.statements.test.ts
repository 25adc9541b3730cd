/**
 * Native workspace sync folders: the SQL statements of one company batch do not grow with the
 * folders in it (no N+1), dry run and removing. A third of the folders are of running runs
 * (kept), the rest of runs settled nine days ago (candidates: locked, judged again and, when
 * removing, renamed aside under their run's lock and deleted). Real job runner (runJob, no
 * BullMQ) on a database and instance of their own, every statement pg sends counted. Until
 * 2026-12-06 only the benchmark (bench/platform/sync-folders.ts) checked this.
 */
import { readdir } from "node:fs/promises";
import { randomUUID } from "node:crypto";
import { batchRunner, statementsTestFile } from "@reclaim/testkit";
import { DOMAIN, insertRun, makeFolder, syncRoot } from "@reclaim/testkit/src/fixtures/native-workspace-sync";

const scratch = statementsTestFile();

/** One batch of a company with `count` folders (every third kept); what it sent and left. */
async function batch(count: number, dryRun: boolean) {
  const { db, root } = await scratch.open();
  const companyId = randomUUID();
  for (let i = 0; i < count; i++) {
    const running = i % 3 === 0;
    const runId = await insertRun(
      { db },
      { companyId, status: running ? "running" : "succeeded", finishedDaysAgo: running ? null : 9 },
    );
    await makeFolder({ instanceRoot: root }, runId, 10, 1024);
  }
  const run = batchRunner(db, root);
  const { report, statements } = await run({ kind: "sweep", domain: DOMAIN, scope: companyId, dryRun });
  expect(report.error).toBeNull();
  const left = (await readdir(syncRoot({ instanceRoot: root }))).filter((n) => !n.startsWith("."));
  return { report, statements, left: left.length };
}

describe("statements per batch", () => {
  it("a dry run of 6 or 60 folders (4 or 40 candidates) sends the same statements", async () => {
    const small = await batch(6, true);
    const large = await batch(60, true);
    expect([small.report.candidates, large.report.candidates]).toEqual([4, 40]);
    expect([small.left, large.left]).toEqual([6, 60]);
    expect(large.statements).toBe(small.statements);
  });

  it("removing 4 or 40 of 6 or 60 folders sends the same statements", async () => {
    const small = await batch(6, false);
    const large = await batch(60, false);
    expect([small.report.removed, large.report.removed]).toEqual([4, 40]);
    expect([small.left, large.left]).toEqual([2, 20]);
    expect(large.statements).toBe(small.statements);
  });
});
