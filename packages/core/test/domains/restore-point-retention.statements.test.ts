/**
 * Restore-point retention: the SQL statements of one company batch do not grow with the
 * restore points in it (no N+1), for reviews (an active row past its delete_after, its tree
 * still open: kept, its delete_after cleared) and for deletions (`delete_requested` rows whose
 * objects local_disk confirms gone: `deleted`). Real job runner (runJob, no BullMQ) on a
 * database and instance of their own, every statement pg sends in the batch counted.
 */
import { randomUUID } from "node:crypto";
import { batchRunner, statementsTestFile } from "@reclaim/testkit";
import { DOMAIN, insertIssue, insertRestorePoint } from "@reclaim/testkit/src/fixtures/restore-points";

const scratch = statementsTestFile();

/** One batch of a company with `count` rows of `status` due now; the rows' statuses after it. */
async function batch(count: number, status: "active" | "delete_requested") {
  const { db, root } = await scratch.open();
  const companyId = randomUUID();
  const past = new Date(Date.now() - 60_000);
  for (let i = 0; i < count; i++) {
    const sourceIssueId = await insertIssue({ db }, { companyId, status: "todo" });
    await insertRestorePoint(
      { db },
      status === "active"
        ? { companyId, sourceIssueId, deleteAfter: past }
        : { companyId, sourceIssueId, status, createdAt: past },
    );
  }
  const run = batchRunner(db, root, { PAPERCLIP_INSTANCE_ROOT: root });
  const { report, statements } = await run({ kind: "deadline", domain: DOMAIN, scope: companyId });
  expect(report.error).toBeNull();
  const rows = await db.executionWorkspaceRestorePoint.findMany({ where: { companyId } });
  return { statements, rows };
}

describe("statements per batch", () => {
  it("reviewing 2 or 20 restore points of open trees (kept, delete_after cleared) sends the same statements", async () => {
    const small = await batch(2, "active");
    const large = await batch(20, "active");
    for (const { rows } of [small, large]) {
      expect(rows.every((r) => r.status === "active" && r.deleteAfter === null)).toBe(true);
    }
    expect(large.statements).toBe(small.statements);
  });

  it("deleting 2 or 20 restore points' objects (delete_requested -> deleted) sends the same statements", async () => {
    const small = await batch(2, "delete_requested");
    const large = await batch(20, "delete_requested");
    for (const { rows } of [small, large]) expect(rows.every((r) => r.status === "deleted")).toBe(true);
    expect(large.statements).toBe(small.statements);
  });
});
