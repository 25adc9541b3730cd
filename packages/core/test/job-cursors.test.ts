/**
 * A deadline job's walk cursors (jobs/cursors.ts): the job reads every cursor of its key with
 * its claim, in that one statement (ledger/claim-due.sql), so a batch's walks read theirs
 * without a statement; a write of the value a cursor already has sends none. Real job runner
 * (runJob, no BullMQ) over a real database and real folders (native workspace sync, whose
 * batches walk a `folders` cursor), every statement recorded by its first line (batchRunner).
 */
import { randomUUID } from "node:crypto";
import { ledgerCursors, readCursor, requestDeadlines, systemClock, type Db } from "@reclaim/core";
import { batchRunner, statementsTestFile } from "@reclaim/testkit";
import { DOMAIN, insertRun, makeFolder } from "@reclaim/testkit/src/fixtures/native-workspace-sync";

const scratch = statementsTestFile();

const CLAIM = "-- The ledger rows of one key that are due";
const READ_CURSOR = "-- A walk's continuation cursor (cursors.ts).";
const WRITE_CURSOR = "-- Sets a walk's continuation cursor";
const count = (lines: string[], start: string) => lines.filter((line) => line.startsWith(start)).length;

/** A company with `count` sync folders of runs settled nine days ago (each one a candidate). */
async function company(db: Db, root: string, folders: number): Promise<string> {
  const companyId = randomUUID();
  for (let i = 0; i < folders; i++) {
    const runId = await insertRun({ db }, { companyId, status: "succeeded", finishedDaysAgo: 9 });
    await makeFolder({ instanceRoot: root }, runId, 10, 1024);
  }
  return companyId;
}

/** One deadline batch of the company's key (a dry run), due now: its report and statements' first lines. */
async function deadlineBatch(db: Db, root: string, companyId: string) {
  await requestDeadlines(
    db,
    [{ domain: DOMAIN, scope: companyId, reason: "retention", dueAt: new Date() }],
    new Date(),
  );
  const run = batchRunner(db, root, { PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN: "true" });
  const { report, lines } = await run({
    kind: "deadline",
    domain: DOMAIN,
    scope: companyId,
    dueAt: new Date().toISOString(),
  });
  return { report, lines };
}

describe("a deadline job's walk cursors", () => {
  it("are read with the job's claim, in its one statement: no batch reads a cursor on its own", async () => {
    const { db, root } = await scratch.open();
    const companyId = await company(db, root, 70);
    // The first batch stops at the 50 candidates a batch can take, and leaves its cursor there.
    const first = await deadlineBatch(db, root, companyId);
    expect(first.report.error).toBeNull();
    expect(first.report.candidates).toBe(50);
    const cursor = await readCursor(db, { domain: DOMAIN, scope: companyId }, "folders");
    expect(cursor).not.toBeNull();
    // The second goes on from it: the 20 folders after it, then the walk's end.
    const second = await deadlineBatch(db, root, companyId);
    expect(second.report.candidates).toBe(20);
    expect(second.report.entries).toHaveLength(20);
    expect((second.report.entries ?? []).every((entry) => entry.id > `native-workspace-sync/${cursor}`)).toBe(
      true,
    );
    expect(await readCursor(db, { domain: DOMAIN, scope: companyId }, "folders")).toBeNull();
    for (const { lines } of [first, second]) {
      expect(count(lines, CLAIM)).toBe(1);
      expect(count(lines, READ_CURSOR)).toBe(0);
    }
  });

  it("send no statement to write the value a cursor already has", async () => {
    const { db, root } = await scratch.open();
    // Fewer folders than a batch takes: the walk ends in its first batch, and it had no cursor.
    const companyId = await company(db, root, 5);
    const ended = await deadlineBatch(db, root, companyId);
    expect(ended.report.candidates).toBe(5);
    expect(count(ended.lines, WRITE_CURSOR)).toBe(0);
    // One that stops mid-walk writes its cursor once.
    const longer = await company(db, root, 60);
    const stopped = await deadlineBatch(db, root, longer);
    expect(stopped.report.candidates).toBe(50);
    expect(count(stopped.lines, WRITE_CURSOR)).toBe(1);
  });

  it("read back what the job wrote, and not a write PostgreSQL refused", async () => {
    const { db } = await scratch.open();
    const key = { domain: DOMAIN, scope: randomUUID() };
    const cursors = ledgerCursors(db, key, systemClock, new Map([["folders", "run-0001"]]));
    expect(await cursors.read("folders")).toBe("run-0001");
    expect(await cursors.read("leftovers")).toBeNull();
    await cursors.write("folders", "run-0042");
    expect(await cursors.read("folders")).toBe("run-0042");
    expect(await readCursor(db, key, "folders")).toBe("run-0042");
    // A NUL in a text value: PostgreSQL refuses the write, and the cursor stays what it was.
    await expect(cursors.write("folders", "run-\u00000043")).rejects.toThrow();
    expect(await cursors.read("folders")).toBe("run-0042");
    await cursors.write("folders", null);
    expect(await cursors.read("folders")).toBeNull();
    expect(await readCursor(db, key, "folders")).toBeNull();
  });
});
