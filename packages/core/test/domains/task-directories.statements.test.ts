/**
 * Isolated task directories: the SQL statements of one company batch do not grow with the
 * items in it (no N+1), dry run and with removal on. Each batch judges its workspaces' items
 * (`ws:`) and their directories' items (`dir:`) and settles every one of them; the verdicts are
 * written in one statement (ledger settleItems), not one per item (they were, until
 * 2026-12-06). Real job runner (runJob, no BullMQ) on a database of its own, every statement pg
 * sends in the batch counted (BEGIN, locks, reads, settlements, the report, COMMIT).
 */
import { randomUUID } from "node:crypto";
import { wakeItems, type BatchReport } from "@reclaim/core";
import { batchRunner, statementsTestFile } from "@reclaim/testkit";
import { task, TASK_ENV } from "@reclaim/testkit/src/fixtures/task-directories";

const DOMAIN = "task-directories";

const scratch = statementsTestFile();

/**
 * One batch of a company with `tasks` closed tasks, each with its workspace's and its
 * directory's item due, on a database and instance of their own; `bound: false` leaves every
 * issue unbound from its workspace (each kept: `issue_not_bound`).
 */
async function batch(tasks: number, opts: { dryRun: boolean; bound: boolean }) {
  const { db, root } = await scratch.open();
  const company = randomUUID();
  const now = new Date();
  for (let i = 0; i < tasks; i++) {
    const t = await task({ db, instanceRoot: root }, { companyId: company });
    if (!opts.bound) await db.issue.update({ where: { id: t.issue }, data: { executionWorkspaceId: null } });
    await wakeItems(
      db,
      [`ws:${t.workspace}`, `dir:${t.issue}`].map((itemId) => ({
        domain: DOMAIN,
        scope: company,
        itemId,
        reason: "item",
        dueAt: now,
      })),
      now,
    );
  }
  const run = batchRunner(db, root, {
    ...TASK_ENV,
    PAPERCLIP_TASK_DIRECTORY_RETENTION_DRY_RUN: String(opts.dryRun),
  });
  const { report, statements } = await run({ kind: "deadline", domain: DOMAIN, scope: company });
  expect(report.error).toBeNull();
  const settled = await db.reclaimItemDeadline.count({ where: { domain: DOMAIN, dueAt: null } });
  return { report, statements, settled };
}

describe("statements per batch", () => {
  it("a dry run of 2 or 10 directories (their workspaces' and their own items) sends the same statements", async () => {
    const small = await batch(2, { dryRun: true, bound: true });
    const large = await batch(10, { dryRun: true, bound: true });
    expect([small.report.candidates, large.report.candidates]).toEqual([2, 10]);
    // Every item judged and settled: the workspaces' (dry_run) and the directories' (workspace_open).
    expect([small.settled, large.settled]).toEqual([4, 20]);
    expect(large.statements).toBe(small.statements);
  });

  it("with removal on, 2 or 10 workspaces kept (issue_not_bound) and their directories send the same statements", async () => {
    const small = await batch(2, { dryRun: false, bound: false });
    const large = await batch(10, { dryRun: false, bound: false });
    const kept = (r: BatchReport) => (r.entries ?? []).filter((e) => e.reason === "issue_not_bound").length;
    expect([kept(small.report), kept(large.report)]).toEqual([2, 10]);
    expect([small.settled, large.settled]).toEqual([4, 20]);
    expect(large.statements).toBe(small.statements);
  });
});
