/**
 * Git workspace restore points: the SQL statements of one company batch do not grow with the
 * workspaces it judges (no N+1). A batch reads its due items, their rows and their facts, and
 * settles every workspace it does not expire in one statement (ledger settleItems; one per
 * workspace until 2026-12-06). Real job runner (runJob, no BullMQ) on a database of its own,
 * every statement pg sends in the batch counted.
 */
import { wakeItems } from "@reclaim/core";
import { LIMITS } from "@reclaim/core/src/domains/git-restore-points/config";
import { batchRunner, statementsTestFile } from "@reclaim/testkit";
import { DOMAIN, gitEnv, openWorkspaceRows } from "@reclaim/testkit/src/fixtures/git-workspaces";

const scratch = statementsTestFile();

/** One batch of a company with `count` due workspaces whose issues are open (each waits). */
async function batch(count: number) {
  const { db, root } = await scratch.open();
  // Rows only: a workspace whose issue is open is judged from the database alone.
  const { project, workspaces } = await openWorkspaceRows(db, root, count);
  const now = new Date();
  await wakeItems(
    db,
    workspaces.map((itemId) => ({
      domain: DOMAIN,
      scope: project.companyId,
      itemId,
      reason: "item",
      dueAt: now,
    })),
    now,
  );
  const run = batchRunner(db, root, gitEnv(true));
  const { report, statements } = await run({ kind: "deadline", domain: DOMAIN, scope: project.companyId });
  expect(report.error).toBeNull();
  // Settled: the verdict's reason replaced the wake-up's.
  const settled = await db.reclaimItemDeadline.count({ where: { domain: DOMAIN, reason: { not: "item" } } });
  return { report, statements, settled };
}

describe("statements per batch", () => {
  it("judging 2 or 8 workspaces (a full batch) whose issues are open sends the same statements", async () => {
    const small = await batch(2);
    const large = await batch(LIMITS.workspacesPerBatch);
    expect([small.report.checked, large.report.checked]).toEqual([2, 8]);
    expect([small.settled, large.settled]).toEqual([2, 8]);
    expect(large.statements).toBe(small.statements);
  });
});
