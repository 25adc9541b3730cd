/**
 * Native session failover backups: the expiry protocol (.retiring, final run check,
 * .expired), the evidence check and when it runs, batch limits and deadlines, and recovery
 * from a crash after each rename. A crash is simulated by an injected fault at the step
 * (the batch stops there, its transaction rolls back); the next sweep must finish or undo
 * what was left.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { FaultPoints, INSTANCE_SCOPE, InjectedFault, type BatchReport } from "@reclaim/core";
import { daysAgo, startStack, waitFor, writeTree, type Stack } from "@reclaim/testkit";
import {
  closedSession,
  copyId,
  currentDir,
  DOMAIN,
  newScope,
  outcomeOf,
  reportLive,
  type Report,
  type SessionFixture,
  SESSIONS,
  withStack,
  sessionDir,
  sessionsRoot,
  setDeletable,
  sweep,
  touch,
  writeArchive,
  writeQuarantine,
  writeState,
} from "./native-session-backups.fixtures";

type Handler = () => Promise<void> | void;
const armed = new Map<string, Handler>();
const at = (point: string, handler: Handler) => armed.set(`native-session-backups.${point}`, handler);
const crash = () => {
  throw new InjectedFault("test");
};
const POINTS = [
  "surveyed",
  "before-leftover-rename",
  "before-expired-rename",
  "after-superseded-rename",
  "final-check",
  "after-retiring-rename",
  "after-expired-rename",
  "after-evidence-rename",
  "after-restore-rename",
  "after-claim",
];

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ worker: false, env: { RECLAIM_JOB_ATTEMPTS: "1" } });
  const handlers = Object.fromEntries(
    POINTS.map((p) => `native-session-backups.${p}`).map((point) => [
      point,
      async () => {
        const handler = armed.get(point);
        armed.delete(point);
        await handler?.();
      },
    ]),
  );
  await stack.startWorker({ faults: FaultPoints.of(handlers) });
  // The start-up checks look at everything on disk: they finish before a test's fixtures exist.
  await stack.idle();
  await reportLive(stack);
});
afterAll(async () => stack?.stop());
afterEach(() => armed.clear());

const backups = (scope: string) => readdir(path.join(sessionDir(stack, scope), "failover-backups"));
const named = (names: string[], prefix: string) => names.filter((n) => n.startsWith(prefix));
const taskSessionOf = (s: SessionFixture) =>
  stack.db.agentTaskSession.findUnique({ where: { id: s.taskSessionId } });

/**
 * Runs the instance deadline job for `reason` now; returns the reports of it and of the
 * continuations it asked for (oldest first), once nothing is due any more.
 */
async function deadline(reason: string, count = 1, on: Stack = stack): Promise<BatchReport[]> {
  const since = new Date();
  await on.scheduler.deps.queues.request([{ domain: DOMAIN, scope: INSTANCE_SCOPE, reason, dueAt: since }]);
  const mine = (rs: BatchReport[]) =>
    rs.filter((r) => r.companyId === null && new Date(r.startedAt) >= since);
  await waitFor(async () => {
    const reports = mine(await on.waitForReports(DOMAIN, () => true));
    const pending = await on.db.reclaimDeadline.count({
      where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, dueAt: { lte: new Date() } },
    });
    return reports.length >= count && pending === 0 ? true : null;
  });
  return mine(await on.waitForReports(DOMAIN, () => true)).reverse();
}

describe("the expiry protocol", () => {
  it("a crash after the rename to .retiring: the next sweep restores the unconfirmed copy, the one after expires it", async () => {
    const s = await closedSession(stack);
    at("after-retiring-rename", crash);
    const crashed = await sweep(stack, null);
    expect(crashed.error).toMatch(/injected fault/);
    expect(named(await backups(s.scope), ".retiring-")).toHaveLength(1);
    expect(existsSync(currentDir(stack, s.scope))).toBe(false);
    // The transaction rolled back: the task session is still there.
    expect(await taskSessionOf(s)).not.toBeNull();

    const restored = await sweep(stack, null);
    expect(outcomeOf(restored, copyId(s.scope))).toBe("unconfirmed_copy_restored");
    expect(await backups(s.scope)).toEqual(["current"]);

    const expired = await sweep(stack, null);
    expect(outcomeOf(expired, copyId(s.scope))).toBe("removed");
    expect(await taskSessionOf(s)).toBeNull();
  });

  it("a run of the session that appears before the final check undoes the rename and keeps the task session", async () => {
    const s = await closedSession(stack);
    at("after-retiring-rename", async () => {
      await stack.db.heartbeatRun.create({
        data: { companyId: s.companyId, status: "queued", sessionIdBefore: s.sessionId },
      });
    });
    const report = await sweep(stack, null);
    expect(outcomeOf(report, copyId(s.scope))).toBe("run_appeared");
    expect(await backups(s.scope)).toEqual(["current"]);
    expect(await taskSessionOf(s)).not.toBeNull();
  });

  it("a crash after the rename to .expired (decision committed): the next sweep finishes the deletion and deletes the record left", async () => {
    const s = await closedSession(stack);
    const records = () =>
      stack.db.reclaimConfirmedRetirement.findMany({ where: { path: { contains: s.scope } } });
    // A record in another session's folder, which holds no leftover (its copy is kept): left alone.
    const other = await closedSession(stack, { issueStatus: "in_progress" });
    const unrelated = `${other.scope}/failover-backups/.retiring-${randomUUID()}`;
    await stack.db.reclaimConfirmedRetirement.create({
      data: { path: unrelated, companyId: other.companyId },
    });
    at("after-expired-rename", crash);
    const crashed = await sweep(stack, null);
    expect(crashed.error).toMatch(/injected fault/);
    expect(named(await backups(s.scope), ".expired-")).toHaveLength(1);
    expect(await taskSessionOf(s)).toBeNull();
    // Crashed before the records of its confirmed copies were deleted: one names a `.retiring-*` gone for good.
    const left = await records();
    expect(left.map((r) => path.basename(r.path))).toEqual([expect.stringMatching(/^\.retiring-/)]);
    expect(named(await backups(s.scope), ".retiring-")).toEqual([]);
    const next = await sweep(stack, null);
    const finished = next.entries.find((e) => e.reason === "interrupted_deletion" && e.id.includes(s.scope));
    expect(finished?.outcome).toBe("removed");
    expect(await backups(s.scope)).toEqual([]);
    expect(await records()).toEqual([]);
    expect(await stack.db.reclaimConfirmedRetirement.count({ where: { path: unrelated } })).toBe(1);
    await stack.db.reclaimConfirmedRetirement.delete({ where: { path: unrelated } });
  });

  it("with no current, the newest .retiring copy (by write time) is restored and the others are superseded", async () => {
    const s = await closedSession(stack);
    const dir = path.join(sessionDir(stack, s.scope), "failover-backups");
    await rm(currentDir(stack, s.scope), { recursive: true });
    // Named so that the older copy sorts first.
    const older = ".retiring-00000000-0000-4000-8000-000000000000";
    const newer = ".retiring-ffffffff-ffff-4fff-bfff-ffffffffffff";
    await writeTree(path.join(dir, older), { "manifest.json": "older" }, daysAgo(20));
    await writeTree(path.join(dir, newer), { "manifest.json": "newer" }, daysAgo(9));
    const report = await sweep(stack, null);
    expect(outcomeOf(report, copyId(s.scope))).toBe("unconfirmed_copy_restored");
    const dropped = report.entries.find((e) => e.id.endsWith(`/${older}`));
    expect(dropped).toMatchObject({ outcome: "removed", reason: "superseded_by_newer_copy" });
    expect(await backups(s.scope)).toEqual(["current"]);
    expect(await readFile(path.join(currentDir(stack, s.scope), "manifest.json"), "utf8")).toBe("newer");
  });

  it("a final check that fails undoes the rename: the copy is current again and the task session kept", async () => {
    const s = await closedSession(stack);
    at("final-check", crash);
    const failed = await sweep(stack, null);
    expect(failed.error).toMatch(/injected fault/);
    expect(await backups(s.scope)).toEqual(["current"]);
    expect(await taskSessionOf(s)).not.toBeNull();
  });

  it("a crash after commit, before the .expired rename: the confirmed copy is never restored, the next sweep finishes its expiry", async () => {
    const s = await closedSession(stack);
    at("before-expired-rename", crash);
    const crashed = await sweep(stack, null);
    expect(crashed.error).toMatch(/injected fault/);
    expect(named(await backups(s.scope), ".retiring-")).toHaveLength(1);
    expect(await taskSessionOf(s)).toBeNull();
    const next = await sweep(stack, null);
    expect(next.entries.map((e) => e.outcome)).not.toContain("unconfirmed_copy_restored");
    const finished = next.entries.filter((e) => e.id.includes(s.scope));
    expect(finished.at(-1)).toMatchObject({ outcome: "removed", reason: "confirmed_copy_interrupted" });
    expect(await backups(s.scope)).toEqual([]);
    expect(await stack.db.reclaimConfirmedRetirement.count({ where: { path: { contains: s.scope } } })).toBe(
      0,
    );
  });

  it("a crash after restoring the newest unconfirmed copy: the next sweep drops the others and judges the restored one", async () => {
    const s = await closedSession(stack);
    const dir = path.join(sessionDir(stack, s.scope), "failover-backups");
    const older = `.retiring-${randomUUID()}`;
    await writeTree(path.join(dir, older), { "manifest.json": "older" }, daysAgo(20));
    await rename(currentDir(stack, s.scope), path.join(dir, `.retiring-${randomUUID()}`));
    at("after-restore-rename", crash);
    const crashed = await sweep(stack, null);
    expect(crashed.error).toMatch(/injected fault/);
    expect((await backups(s.scope)).sort()).toEqual([older, "current"].sort());
    const next = await sweep(stack, null);
    expect(next.entries.find((e) => e.id.endsWith(`/${older}`))).toMatchObject({
      outcome: "removed",
      reason: "superseded_by_newer_copy",
    });
    expect(outcomeOf(next, copyId(s.scope))).toBe("removed");
    expect(await backups(s.scope)).toEqual([]);
  });

  it("a crash after a superseded .retiring copy is renamed to .expired: the next sweep finishes its deletion", async () => {
    const s = await closedSession(stack, { copyAgeDays: 1 });
    const dir = path.join(sessionDir(stack, s.scope), "failover-backups");
    await writeTree(path.join(dir, `.retiring-${randomUUID()}`), { "manifest.json": "{}" }, daysAgo(9));
    at("after-superseded-rename", crash);
    const crashed = await sweep(stack, null);
    expect(crashed.error).toMatch(/injected fault/);
    const [expired, ...others] = named(await backups(s.scope), ".expired-");
    expect({ expired, others, retiring: named(await backups(s.scope), ".retiring-") }).toEqual({
      expired: expect.any(String),
      others: [],
      retiring: [],
    });
    const next = await sweep(stack, null);
    expect(next.entries.find((e) => e.id.endsWith(`/${expired}`))).toMatchObject({
      outcome: "removed",
      reason: "interrupted_deletion",
    });
    expect(await backups(s.scope)).toEqual(["current"]);
  });

  it("a .retiring copy is dropped when a newer current exists", async () => {
    const s = await closedSession(stack, { copyAgeDays: 1 });
    const stale = path.join(sessionDir(stack, s.scope), "failover-backups", `.retiring-${randomUUID()}`);
    await writeTree(stale, { "manifest.json": "{}" }, daysAgo(9));
    const report = await sweep(stack, null);
    expect(report.entries.find((e) => e.reason === "superseded_by_newer_copy")?.outcome).toBe("removed");
    expect(outcomeOf(report, copyId(s.scope))).toBe("copy_written_within_window");
    expect(await backups(s.scope)).toEqual(["current"]);
  });
});

describe("evidence", () => {
  it("an old continuity-break archive is removed, its emptied folder too; a young one stays until epoch + window", async () => {
    const s = await closedSession(stack, { issueStatus: "in_progress" });
    const old = await writeArchive(stack, s.scope, 8);
    const report = await sweep(stack, null);
    expect(outcomeOf(report, old.id)).toBe("removed");
    expect(existsSync(path.join(sessionDir(stack, s.scope), "continuity-breaks"))).toBe(false);

    const young = await writeArchive(stack, s.scope, 2);
    const kept = await sweep(stack, null);
    expect(outcomeOf(kept, young.id)).toBe("within_retention");
    const due = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "evidence" },
    });
    expect(due!.dueAt.getTime()).toBeLessThanOrEqual(daysAgo(2).getTime() + 7 * 86400_000 + 1000);
  });

  it("quarantine entries go after the window; cleanup entries, other names, files and symlinks stay", async () => {
    const scope = newScope();
    const old = await writeQuarantine(stack, scope, 8);
    const cleanup = await writeQuarantine(
      stack,
      scope,
      30,
      `${scope}.identity_indeterminate.cleanup.${randomUUID()}`,
    );
    const odd = await writeQuarantine(stack, scope, 30, `${scope}-not-evidence`);
    const q = path.join(sessionsRoot(stack), "quarantine");
    await writeFile(path.join(q, `${scope}.lost.${daysAgo(30).getTime()}.1.${randomUUID()}`), "a file");
    const target = path.join(stack.instanceRoot, `target-${scope}`);
    await writeTree(target, { "keep.txt": "mine" }, daysAgo(30));
    const link = `${scope}.lost.${daysAgo(30).getTime()}.2.${randomUUID()}`;
    await symlink(target, path.join(q, link));
    const report = await sweep(stack, null);
    expect(outcomeOf(report, old.id)).toBe("removed");
    expect(outcomeOf(report, cleanup.id)).toBe("cleanup_quarantine_kept");
    expect(outcomeOf(report, odd.id)).toBe("unrecognized_name");
    expect(outcomeOf(report, `runtime/paperclip-runner/durable-sessions/quarantine/${link}`)).toBe("symlink");
    expect(existsSync(path.join(target, "keep.txt"))).toBe(true);
    expect(existsSync(cleanup.dir) && existsSync(odd.dir)).toBe(true);
  });

  it("a symlinked session directory is never walked: archives and quarantine-like content in its target stay", async () => {
    const old = daysAgo(30);
    const target = path.join(stack.instanceRoot, `elsewhere-${randomUUID()}`);
    const archive = `${old.getTime()}-${randomUUID()}`;
    await writeTree(path.join(target, "continuity-breaks", archive), { "thread.jsonl": 1024 }, old);
    const quarantined = `x.authority_lost.${old.getTime()}.1.${randomUUID()}`;
    await writeTree(path.join(target, "quarantine", quarantined), { "runner-state.json": 1024 }, old);
    const emptyTarget = path.join(stack.instanceRoot, `elsewhere-${randomUUID()}`);
    await mkdir(path.join(emptyTarget, "continuity-breaks"), { recursive: true });
    const [linked, linkedEmpty] = [newScope(), newScope()];
    await mkdir(sessionsRoot(stack), { recursive: true });
    await symlink(target, sessionDir(stack, linked));
    await symlink(emptyTarget, sessionDir(stack, linkedEmpty));

    const report = await sweep(stack, null);
    expect(report.error).toBeNull();
    const evidenceOf = (scope: string) =>
      report.entries.filter((e) => e.id.startsWith(`${SESSIONS}/${scope}/c`));
    expect([...evidenceOf(linked), ...evidenceOf(linkedEmpty)]).toEqual([]);
    expect(await readdir(path.join(target, "continuity-breaks"))).toEqual([archive]);
    expect(await readdir(path.join(target, "quarantine"))).toEqual([quarantined]);
    expect(existsSync(path.join(emptyTarget, "continuity-breaks"))).toBe(true);
  });

  it("an already-empty continuity-breaks folder is removed; the session directory stays", async () => {
    const scope = newScope();
    const archives = path.join(sessionDir(stack, scope), "continuity-breaks");
    await mkdir(archives, { recursive: true });
    const report = await sweep(stack, null);
    expect(report.error).toBeNull();
    expect(existsSync(archives)).toBe(false);
    expect(existsSync(sessionDir(stack, scope))).toBe(true);
  });

  it("is kept while liveness is unknown (no report, or one older than the maximum age)", async () => {
    const entry = await writeQuarantine(stack, newScope(), 9);
    try {
      await stack.db.reclaimNativeSessionLiveness.deleteMany({});
      expect(outcomeOf(await sweep(stack, null), entry.id)).toBe("liveness_unknown");
      await reportLive(stack, [], new Date(Date.now() - 301_000));
      expect(outcomeOf(await sweep(stack, null), entry.id)).toBe("liveness_unknown");
      expect(existsSync(entry.dir)).toBe(true);
    } finally {
      await reportLive(stack);
    }
    expect(outcomeOf(await sweep(stack, null), entry.id)).toBe("removed");
  });

  it("is checked at start-up, and again at the next sweep after a failed removal", async () => {
    await withStack({}, async (own) => {
      const entry = await writeQuarantine(own, newScope(), 9);
      const stuck = "runner-state.json";
      const quarantine = path.join(sessionsRoot(own), "quarantine");
      await setDeletable(path.join(entry.dir, stuck), false);
      try {
        const [startup] = await deadline("startup", 1, own);
        const failed = (startup!.entries ?? []).find((e) => e.id === entry.id && e.outcome === "failed");
        expect(failed?.reason).toBe("delete_failed");
        const next = await own.db.reclaimDeadline.findFirst({
          where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "evidence" },
        });
        expect(Math.abs(next!.dueAt.getTime() - (Date.now() + 3600_000))).toBeLessThan(60_000);
      } finally {
        for (const name of named(await readdir(quarantine), ".expired-"))
          await setDeletable(path.join(quarantine, name, stuck), true);
      }
      const [again] = await deadline("evidence", 1, own);
      const finished = (again!.entries ?? []).find((e) => e.reason === "interrupted_deletion");
      expect(finished?.outcome).toBe("removed");
      expect(await readdir(quarantine)).toEqual([]);
    });
  });

  it("an entry whose epoch is in the future is aged by its modification time", async () => {
    const scope = newScope();
    const future = Date.now() + 30 * 86400_000;
    const old = await writeQuarantine(stack, scope, 10, `${scope}.lost.${future}.1.${randomUUID()}`);
    const fresh = await writeQuarantine(stack, scope, 1, `${scope}.lost.${future}.2.${randomUUID()}`);
    await touch(old.dir, daysAgo(10));
    const report = await sweep(stack, null);
    expect(outcomeOf(report, old.id)).toBe("removed");
    expect(outcomeOf(report, fresh.id)).toBe("within_retention");
  });

  it("is kept while its session is live, and looked at again at the next sweep", async () => {
    const scope = newScope();
    const entry = await writeQuarantine(stack, scope, 9);
    await reportLive(stack, [{ id: scope, state: "warm" }]);
    const report = await sweep(stack, null);
    await reportLive(stack);
    expect(outcomeOf(report, entry.id)).toBe("session_live");
    const due = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "evidence" },
    });
    expect(due!.dueAt.getTime()).toBeLessThanOrEqual(Date.now() + 3600_000);
  });

  it("is checked only when something is due, never on a plain hourly sweep", async () => {
    const scope = newScope();
    const entry = await writeQuarantine(stack, scope, 9);
    const [hourly] = await deadline("hourly");
    expect((hourly!.entries ?? []).some((e) => e.id === entry.id)).toBe(false);
    expect(existsSync(entry.dir)).toBe(true);
    const [due] = await deadline("evidence");
    expect(outcomeOf(due as Parameters<typeof outcomeOf>[0], entry.id)).toBe("removed");
  });

  it("an entry written since comes due through native_sessions.evidence_written", async () => {
    const writtenAt = new Date();
    const response = await stack.api("POST", "/v1/events", {
      events: [
        { type: "native_sessions.evidence_written", kind: "quarantine", writtenAt: writtenAt.toISOString() },
      ],
    });
    expect(response.status).toBe(202);
    const due = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "evidence" },
    });
    expect(due!.dueAt.getTime()).toBeLessThanOrEqual(writtenAt.getTime() + 7 * 86400_000);
  });

  it("a crash after the rename to .expired: the next check finishes the deletion", async () => {
    const scope = newScope();
    const entry = await writeQuarantine(stack, scope, 9);
    at("after-evidence-rename", crash);
    const crashed = await sweep(stack, null);
    expect(crashed.error).toMatch(/injected fault/);
    const q = path.join(sessionsRoot(stack), "quarantine");
    expect(existsSync(entry.dir)).toBe(false);
    expect(named(await readdir(q), ".expired-").length).toBeGreaterThan(0);
    const next = await sweep(stack, null);
    expect(next.entries.some((e) => e.reason === "interrupted_deletion" && e.outcome === "removed")).toBe(
      true,
    );
    expect(named(await readdir(q), ".expired-")).toEqual([]);
  });
});

describe("an entry that vanishes between the survey and the step that uses it", () => {
  const leftoverId = (scope: string, name: string) => `${SESSIONS}/${scope}/failover-backups/${name}`;
  const retiringOf = (scope: string) =>
    path.join(sessionDir(stack, scope), "failover-backups", `.retiring-${randomUUID()}`);

  it("an evidence entry is reported vanished, and the rest of the batch goes on", async () => {
    const gone = await writeQuarantine(stack, newScope(), 9);
    const kept = await writeQuarantine(stack, newScope(), 9);
    at("surveyed", () => rm(gone.dir, { recursive: true }));
    const report = await sweep(stack, null);
    expect(report.error).toBeNull();
    expect(outcomeOf(report, gone.id)).toBe("vanished");
    expect(outcomeOf(report, kept.id)).toBe("removed");
  });

  it("an unconfirmed .retiring copy that another job moved first is reported vanished, not restored", async () => {
    const s = await closedSession(stack);
    const retiring = retiringOf(s.scope);
    await rename(currentDir(stack, s.scope), retiring);
    const elsewhere = path.join(path.dirname(retiring), `.expired-${randomUUID()}`);
    at("before-leftover-rename", () => rename(retiring, elsewhere));
    const report = await sweep(stack, null);
    expect(report.error).toBeNull();
    expect(outcomeOf(report, leftoverId(s.scope, path.basename(retiring)))).toBe("vanished");
    expect(existsSync(currentDir(stack, s.scope))).toBe(false);
  });

  it("a leftover left after the survey in a folder it found without one is the next batch's; the copy still expires", async () => {
    const s = await closedSession(stack);
    const expired = `.expired-${randomUUID()}`;
    const folder = path.join(sessionDir(stack, s.scope), "failover-backups");
    // As another job's finish leaves one: not listed again under the lock by this batch.
    at("surveyed", () => writeTree(path.join(folder, expired), { "t.jsonl": 4096 }));
    const report = await sweep(stack, null);
    expect(report.error).toBeNull();
    expect(outcomeOf(report, copyId(s.scope))).toBe("removed");
    expect(outcomeOf(report, leftoverId(s.scope, expired))).toBeUndefined();
    expect(await backups(s.scope)).toEqual([expired]);
    const next = await sweep(stack, null);
    expect(outcomeOf(next, leftoverId(s.scope, expired))).toBe("removed");
    expect(await backups(s.scope)).toEqual([]);
  });

  it("a copy gone before its rename to .retiring is reported vanished; its task session stays", async () => {
    const s = await closedSession(stack);
    at("surveyed", () => rm(currentDir(stack, s.scope), { recursive: true }));
    const report = await sweep(stack, null);
    expect(report.error).toBeNull();
    expect(outcomeOf(report, copyId(s.scope))).toBe("vanished");
    expect(await taskSessionOf(s)).not.toBeNull();
  });

  it("a superseded .retiring copy is reported vanished", async () => {
    const s = await closedSession(stack, { copyAgeDays: 1 });
    const retiring = retiringOf(s.scope);
    await writeTree(retiring, { "manifest.json": "{}" }, daysAgo(9));
    at("before-leftover-rename", () => rm(retiring, { recursive: true }));
    const report = await sweep(stack, null);
    expect(report.error).toBeNull();
    expect(outcomeOf(report, leftoverId(s.scope, path.basename(retiring)))).toBe("vanished");
    expect(outcomeOf(report, copyId(s.scope))).toBe("copy_written_within_window");
  });
});

describe("the instance lock", () => {
  it("leaves one window: a committed copy restored by a concurrent sweep before its .expired rename is reported vanished, and expires again later", async () => {
    const s = await closedSession(stack);
    at("before-expired-rename", async () => {
      const [retiring] = named(await backups(s.scope), ".retiring-");
      await rename(
        path.join(sessionDir(stack, s.scope), "failover-backups", retiring!),
        currentDir(stack, s.scope),
      );
    });
    const committed = await sweep(stack, null);
    expect(committed.error).toBeNull();
    expect(outcomeOf(committed, copyId(s.scope))).toBe("vanished");
    expect(await taskSessionOf(s)).toBeNull();
    expect(await backups(s.scope)).toEqual(["current"]);
    expect(outcomeOf(await sweep(stack, null), copyId(s.scope))).toBe("removed");
    expect(await backups(s.scope)).toEqual([]);
  });

  it("is taken by a company's requested sweep too: it waits while the instance job holds it", async () => {
    const s = await closedSession(stack);
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const instanceJob = stack.db.$transaction(
      async (tx) => {
        await tx.$queryRawUnsafe(
          "SELECT pg_advisory_xact_lock(hashtext('reclaim.native-session-backups'), hashtext('instance'))::text",
        );
        locked();
        await hold;
      },
      { timeout: 60_000 },
    );
    await isLocked;
    let finished = false;
    const swept = sweep(stack, s.companyId).then((report) => {
      finished = true;
      return report;
    });
    // Either the sweep waits for the lock, or (with a lock of its own) it finishes meanwhile.
    await waitFor(async () => {
      const rows = await stack.db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM pg_locks
          WHERE locktype = 'advisory' AND NOT granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      return rows[0]!.n > 0 || finished ? true : null;
    });
    expect(finished).toBe(false);
    release();
    await instanceJob;
    expect(outcomeOf(await swept, copyId(s.scope))).toBe("removed");
  });
});

describe("each tree is deleted and reported once", () => {
  it("a copy the instance job has claimed and is deleting is not taken by a requested sweep's leftover pass", async () => {
    const s = await closedSession(stack);
    // The instance job committed the copy's expiry and claimed its .expired tree; right then
    // a company's requested sweep runs (the instance lock is free after the commit).
    let during: Report | null = null;
    at("after-claim", async () => {
      during = await sweep(stack, s.companyId);
    });
    const owner = await sweep(stack, null);
    expect(owner.error).toBeNull();
    expect(outcomeOf(owner, copyId(s.scope))).toBe("removed");
    expect(during).not.toBeNull();
    expect(during!.error).toBeNull();
    expect(during!.entries.filter((e) => e.outcome === "removed")).toEqual([]);
    expect(await backups(s.scope)).toEqual([]);
  });
});

describe("deadlines", () => {
  it("the first sweep is due two minutes after readiness, and each sweep asks for the next in an hour", async () => {
    const startup = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "startup" },
    });
    expect(startup).not.toBeNull();
    const created = startup!.createdAt.getTime();
    expect(startup!.dueAt.getTime() - created).toBeGreaterThanOrEqual(119_000);
    expect(startup!.dueAt.getTime() - created).toBeLessThanOrEqual(121_000);
    await deadline("hourly");
    const hourly = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "hourly" },
    });
    expect(Math.abs(hourly!.dueAt.getTime() - (Date.now() + 3600_000))).toBeLessThan(60_000);
  });
});

describe("batches", () => {
  it("expire at most 50 copies, and continue at once", async () => {
    const made = [];
    for (let i = 0; i < 55; i++) made.push(await closedSession(stack));
    const [first, second] = await deadline("hourly", 2);
    expect(first!.removed).toBe(50);
    expect(second!.removed).toBe(5);
    for (const s of made) expect(existsSync(currentDir(stack, s.scope))).toBe(false);
  });

  it("share the 50 removals between copies and evidence: evidence left without a removal is checked by the continuation", async () => {
    await withStack({}, async (own) => {
      for (let i = 0; i < 51; i++) await closedSession(own);
      const entry = await writeQuarantine(own, newScope(), 9);
      // Start-up makes both the session walk and the evidence check due.
      const [first, second] = await deadline("startup", 2, own);
      expect(first!.removed).toBe(50);
      expect((first!.entries ?? []).some((e) => e.id === entry.id)).toBe(false);
      expect(outcomeOf(second as Report, entry.id)).toBe("removed");
      expect(second!.removed).toBe(2);
      expect(existsSync(entry.dir)).toBe(false);
    });
  });

  it("count leftovers toward the 50 removals: interrupted deletions past them wait for the continuation", async () => {
    await withStack({}, async (own) => {
      const s = await closedSession(own, { issueStatus: "in_progress" });
      const dir = path.join(sessionDir(own, s.scope), "failover-backups");
      for (let i = 0; i < 60; i++) await writeTree(path.join(dir, `.expired-${randomUUID()}`), { f: "x" });
      const [first, second] = await deadline("hourly", 2, own);
      expect(first!.removed).toBe(50);
      expect(second!.removed).toBe(10);
      expect(outcomeOf(second as Report, copyId(s.scope))).toBe("issue_open");
      expect(await readdir(dir)).toEqual(["current"]);
    });
  });

  it("page through evidence: every entry once, resuming inside a session's archives", async () => {
    await withStack({}, async (own) => {
      const ids: string[] = [];
      for (const scope of [newScope(), newScope(), newScope()]) {
        await writeState(own, scope, { companyId: randomUUID(), sessionId: "s" });
        for (let i = 0; i < 90; i++) ids.push((await writeArchive(own, scope, 1)).id);
      }
      for (let i = 0; i < 30; i++) ids.push((await writeQuarantine(own, newScope(), 1)).id);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await sweep(own, null, { dryRun: true, ...(cursor ? { cursor } : {}) });
        expect(page.checked).toBeLessThanOrEqual(200);
        seen.push(...page.entries.filter((e) => e.reason === "within_retention").map((e) => e.id));
        cursor = page.nextCursor ?? undefined;
        pages += 1;
      } while (cursor && pages < 5);
      expect(pages).toBe(2);
      expect(seen.sort()).toEqual(ids.sort());
    });
  });

  it("check at most 200 entries, sessions and evidence together", async () => {
    // A fresh instance: leftovers of the other tests count toward the limit too.
    const own = await startStack();
    try {
      await reportLive(own);
      for (let i = 0; i < 195; i++)
        await writeState(own, newScope(), { companyId: randomUUID(), sessionId: "s" });
      const entries: { id: string }[] = [];
      for (let i = 0; i < 10; i++) entries.push(await writeQuarantine(own, newScope(), 1));
      const first = await sweep(own, null, { dryRun: true });
      expect(first.checked).toBe(200);
      const second = await sweep(own, null, { dryRun: true, cursor: first.nextCursor });
      // The sessions fill the first batch; the evidence entries come in the rest of it and the next.
      const ids = [...first.entries, ...second.entries].map((e) => e.id);
      for (const entry of entries) expect(ids.filter((id) => id === entry.id)).toHaveLength(1);
      expect(first.entries.some((e) => entries.some((x) => x.id === e.id))).toBe(true);
      expect(second.entries.some((e) => entries.some((x) => x.id === e.id))).toBe(true);
      expect(second.nextCursor).toBeNull();
    } finally {
      await own.stop();
    }
  });
});

describe("dry run", () => {
  let dry: Stack;
  beforeAll(async () => {
    dry = await startStack({ env: { PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_DRY_RUN: "true" } });
    await reportLive(dry);
  });
  afterAll(async () => dry?.stop());

  it("reports each evidence candidate once, until newly written evidence comes due", async () => {
    const scope = newScope();
    const old = await writeQuarantine(dry, scope, 9);
    const young = await writeQuarantine(dry, scope, 2);
    const run = async (reason: string) => {
      const before = await dry.db.reclaimBatchReport.count({
        where: { domain: DOMAIN, companyId: INSTANCE_SCOPE },
      });
      await dry.scheduler.deps.queues.request([
        { domain: DOMAIN, scope: INSTANCE_SCOPE, reason, dueAt: new Date() },
      ]);
      const reports = await dry.waitForReports(
        DOMAIN,
        (rs) => rs.filter((r) => r.companyId === null).length > before,
      );
      return reports.find((r) => r.companyId === null)!;
    };
    const first = await run("evidence");
    expect(outcomeOf(first as never, old.id)).toBe("candidate");
    expect(outcomeOf(first as never, young.id)).toBe("within_retention");
    // The next evidence check is when the young entry comes due, not sooner.
    const next = await dry.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "evidence" },
    });
    expect(next!.dueAt.getTime()).toBeGreaterThan(Date.now() + 4 * 86400_000);
    const hourly = await run("hourly");
    expect((hourly.entries ?? []).some((e) => e.id === old.id)).toBe(false);
    expect(existsSync(old.dir)).toBe(true);
  });
});
