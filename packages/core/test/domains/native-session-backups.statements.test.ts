/**
 * Native session backups: the SQL statements of one batch do not grow with the entries in it
 * (no N+1), dry run and expiring, with every kind of entry a batch handles: copies, their
 * continuity-break archives, and an interrupted batch's confirmed `.retiring-*` and
 * `.expired-*` leftovers. Each batch runs through the real job pipeline (runJob, no BullMQ)
 * on a database of its own, and every statement pg sends in it is counted (BEGIN, locks,
 * reads, the settle's ledger and report writes, COMMIT). A statement per copy, per session or
 * per leftover came in once unnoticed (a704047: one DELETE per confirmed copy after commit).
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { INSTANCE_SCOPE, type BatchReport } from "@reclaim/core";
import { batchRunner, statementsTestFile, writeTree, type Stack } from "@reclaim/testkit";
import { closedSession, DOMAIN, sessionDir, writeArchive } from "./native-session-backups.fixtures";

const scratch = statementsTestFile();

/**
 * `sessions` expirable sessions on a database and instance of their own, each with a due
 * continuity-break archive and, with `leftovers`, a confirmed `.retiring-*` (its expiry
 * committed, the batch stopped before `.expired`) and an `.expired-*` in `failover-backups`.
 */
async function instance(sessions: number, leftovers: boolean) {
  const { db, root } = await scratch.open();
  const stack = { db, instanceRoot: root } as unknown as Stack;
  const now = new Date();
  await db.reclaimNativeSessionLiveness.create({ data: { sessions: [], reportedAt: now, receivedAt: now } });
  for (let i = 0; i < sessions; i++) {
    const s = await closedSession(stack);
    await writeArchive(stack, s.scope, 10);
    if (!leftovers) continue;
    const backups = path.join(sessionDir(stack, s.scope), "failover-backups");
    const retiring = `.retiring-${randomUUID()}`;
    await writeTree(path.join(backups, retiring), { "manifest.json": "{}" });
    await writeTree(path.join(backups, `.expired-${randomUUID()}`), { "t.jsonl": 4096 });
    const rel = path.relative(path.join(root, "runtime/paperclip-runner/durable-sessions"), backups);
    await db.reclaimConfirmedRetirement.create({
      data: { path: `${rel}/${retiring}`, companyId: s.companyId },
    });
  }
  const run = batchRunner(db, root);
  return (dryRun: boolean) => run({ kind: "sweep", domain: DOMAIN, scope: INSTANCE_SCOPE, dryRun });
}

/** One batch over 2 and over 12 sessions, each on an instance of its own. */
async function smallAndLarge(dryRun: boolean, leftovers: boolean) {
  const small = await (await instance(2, leftovers))(dryRun);
  const large = await (await instance(12, leftovers))(dryRun);
  expect(small.report.error).toBeNull();
  expect(large.report.error).toBeNull();
  return { small: small.report, large: large.report, statements: [small.statements, large.statements] };
}

describe("statements per batch", () => {
  it("a dry run of 2 or 12 sessions (with archives) sends the same statements", async () => {
    const { small, large, statements } = await smallAndLarge(true, false);
    expect([small.candidates, large.candidates]).toEqual([4, 24]);
    expect(statements[1]).toBe(statements[0]);
  });

  it("expiring 2 or 12 sessions (copies and archives removed) sends the same statements", async () => {
    const { small, large, statements } = await smallAndLarge(false, false);
    expect([small.removed, large.removed]).toEqual([4, 24]);
    expect(statements[1]).toBe(statements[0]);
  });

  it("finishing 2 or 12 sessions' confirmed .retiring-* and .expired-* leftovers sends the same statements", async () => {
    const { small, large, statements } = await smallAndLarge(false, true);
    const finished = (r: BatchReport) =>
      (r.entries ?? []).filter(
        (e) => e.reason === "confirmed_copy_interrupted" || e.reason === "interrupted_deletion",
      );
    expect([finished(small).length, finished(large).length]).toEqual([4, 24]);
    expect([small.removed, large.removed]).toEqual([8, 48]);
    expect(statements[1]).toBe(statements[0]);
  });
});
