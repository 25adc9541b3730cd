/**
 * Native session failover backups: each expiry condition of the spec, on real session
 * directories and real rows, through the scheduler API and a real BullMQ worker.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, rm, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { createLogger, DAY_MS, TestClock } from "@reclaim/core";
import { daysAgo, outsideDir, startStack, writeTree, type Stack } from "@reclaim/testkit";
import {
  insertFinalization,
  insertRecoveryAction,
} from "@reclaim/testkit/src/fixtures/native-workspace-sync";
import {
  closedSession,
  copyId,
  currentDir,
  DOMAIN,
  newScope,
  outcomeOf,
  reportLive,
  sessionDir,
  sweep,
  withStack,
  expectRefused,
  writeArchive,
  writeQuarantine,
  writeState,
} from "./native-session-backups.fixtures";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
  await reportLive(stack);
});
afterAll(async () => stack?.stop());

const expectKept = async (scope: string, reason: string, companyId: string | null = null) => {
  const report = await sweep(stack, companyId);
  expect(outcomeOf(report, copyId(scope))).toBe(reason);
  expect(existsSync(path.join(currentDir(stack, scope), "manifest.json"))).toBe(true);
  return report;
};

describe("a copy expires", () => {
  it("when its session can only resume by reopening closed work; the task session goes, the rest stays", async () => {
    const s = await closedSession(stack);
    await writeFile(path.join(sessionDir(stack, s.scope), "runner.log"), "kept");
    const report = await sweep(stack, null);
    expect(outcomeOf(report, copyId(s.scope))).toBe("removed");
    expect(report.reclaimedBytes).toBeGreaterThanOrEqual(64 * 1024);
    expect(report.candidateBytes).toBe(report.reclaimedBytes);
    expect(await readdir(path.join(sessionDir(stack, s.scope), "failover-backups"))).toEqual([]);
    expect(await stack.db.agentTaskSession.findUnique({ where: { id: s.taskSessionId } })).toBeNull();
    // The rest of the session directory, control-plane state included, is kept.
    expect(existsSync(path.join(sessionDir(stack, s.scope), "control-plane.json"))).toBe(true);
    expect(existsSync(path.join(sessionDir(stack, s.scope), "runner.log"))).toBe(true);
  });

  it("when its issue was cancelled before the window", async () => {
    const s = await closedSession(stack, { issueStatus: "cancelled" });
    expect(outcomeOf(await sweep(stack, null), copyId(s.scope))).toBe("removed");
  });

  it("when its runs' finalizations ended in terminal failure without recovery state", async () => {
    const s = await closedSession(stack);
    await insertFinalization(stack, { companyId: s.companyId, runId: s.runId, phase: "terminal_failure" });
    expect(outcomeOf(await sweep(stack, null), copyId(s.scope))).toBe("removed");
  });

  it("when a lease that referenced it was destroyed", async () => {
    const s = await closedSession(stack);
    await stack.db.environmentLease.create({
      data: {
        companyId: s.companyId,
        status: "destroyed",
        metadata: { nativeHarnessBackup: { sessionScopeId: s.scope } },
      },
    });
    expect(outcomeOf(await sweep(stack, null), copyId(s.scope))).toBe("removed");
  });
});

describe("a copy is kept", () => {
  it.each(["in_progress", "todo", "blocked", "in_review"])(
    "while an issue the session ran on is %s",
    async (issueStatus) => {
      const s = await closedSession(stack, { issueStatus });
      await expectKept(s.scope, "issue_open");
    },
  );

  it("while an issue it ran on closed within the window", async () => {
    const s = await closedSession(stack, { issueClosedDaysAgo: 3 });
    await expectKept(s.scope, "issue_closed_within_window");
  });

  it("while any issue it ran on (through any of its runs, or listed in its state) is open", async () => {
    const s = await closedSession(stack);
    const open = await stack.db.issue.create({ data: { companyId: s.companyId, status: "in_progress" } });
    await writeState(stack, s.scope, { companyId: s.companyId, sessionId: s.sessionId, issueIds: [open.id] });
    await expectKept(s.scope, "issue_open");
  });

  it("while the copy was written within the window", async () => {
    const s = await closedSession(stack, { copyAgeDays: 2 });
    await expectKept(s.scope, "copy_written_within_window");
  });

  it.each([
    ["queued", null],
    ["scheduled_retry", null],
    ["running", null],
    ["succeeded", null],
  ])("while a run of the session is %s (finished_at %s)", async (runStatus, finished) => {
    const s = await closedSession(stack, { runStatus, runFinishedDaysAgo: finished });
    await expectKept(s.scope, "run_unfinished");
  });

  it("while a run recorded with the session id before the turn is unfinished", async () => {
    const s = await closedSession(stack);
    await stack.db.heartbeatRun.create({
      data: { companyId: s.companyId, status: "queued", sessionIdBefore: s.sessionId },
    });
    await expectKept(s.scope, "run_unfinished");
  });

  it("while a run its state lists is unfinished", async () => {
    const s = await closedSession(stack);
    const run = await stack.db.heartbeatRun.create({ data: { companyId: s.companyId, status: "running" } });
    await writeState(stack, s.scope, { companyId: s.companyId, sessionId: s.sessionId, runIds: [run.id] });
    await expectKept(s.scope, "run_unfinished");
  });

  it.each([
    ["a lease owner", { phase: "committed", leaseOwner: "server-1" }],
    ["a next attempt scheduled", { phase: "committed", nextAttemptAt: new Date() }],
    ["phase running", { phase: "running" }],
  ])("while a finalization of its runs has %s", async (_label, finalization) => {
    const s = await closedSession(stack);
    await insertFinalization(stack, { companyId: s.companyId, runId: s.runId, ...finalization });
    await expectKept(s.scope, "finalization_unsettled");
  });

  it("while an active or escalated recovery action names one of its runs (a resolved one does not)", async () => {
    const a = await closedSession(stack);
    await insertRecoveryAction(stack, { companyId: a.companyId, runId: a.runId, cause: "stranded_run" });
    const b = await closedSession(stack);
    await insertRecoveryAction(stack, {
      companyId: b.companyId,
      runId: b.runId,
      status: "escalated",
      cause: "stranded_run",
    });
    const c = await closedSession(stack);
    await insertRecoveryAction(stack, {
      companyId: c.companyId,
      runId: c.runId,
      status: "resolved",
      cause: "stranded_run",
    });
    const report = await sweep(stack, null);
    expect(outcomeOf(report, copyId(a.scope))).toBe("recovery_in_progress");
    expect(outcomeOf(report, copyId(b.scope))).toBe("recovery_in_progress");
    expect(outcomeOf(report, copyId(c.scope))).toBe("removed");
  });

  it.each(["active", "released", "retained", "pending_cleanup"])(
    "while a %s environment lease references it",
    async (status) => {
      const s = await closedSession(stack);
      await stack.db.environmentLease.create({
        data: {
          companyId: s.companyId,
          status,
          metadata: { nativeHarnessBackup: { sessionScopeId: s.scope } },
        },
      });
      await expectKept(s.scope, "lease_references_copy");
    },
  );

  it.each(["missing", "unreadable", "too_large"])("while its control-plane state is %s", async (kind) => {
    const s = await closedSession(stack);
    const file = path.join(sessionDir(stack, s.scope), "control-plane.json");
    if (kind === "missing") await rm(file);
    if (kind === "unreadable") await writeFile(file, "{ not json");
    if (kind === "too_large") {
      await writeFile(
        file,
        JSON.stringify({ companyId: s.companyId, sessionId: s.sessionId, pad: "x".repeat(4 * 1024 * 1024) }),
      );
    }
    await expectKept(s.scope, `control_plane_state_${kind}`);
  });

  it("while its control-plane state is a symlink or a FIFO (never followed, never blocks)", async () => {
    const s = await closedSession(stack);
    const outside = await outsideDir({
      "state.json": JSON.stringify({ companyId: s.companyId, sessionId: s.sessionId }),
    });
    try {
      const file = path.join(sessionDir(stack, s.scope), "control-plane.json");
      await rm(file);
      await symlink(path.join(outside.path, "state.json"), file);
      const fifo = await closedSession(stack);
      const fifoFile = path.join(sessionDir(stack, fifo.scope), "control-plane.json");
      await rm(fifoFile);
      execFileSync("mkfifo", [fifoFile]);
      const report = await expectKept(s.scope, "control_plane_state_unreadable");
      expect(outcomeOf(report, copyId(fifo.scope))).toBe("control_plane_state_unreadable");
      expect(await outside.changes()).toEqual([]);
    } finally {
      await outside.remove();
    }
  });

  it("while its copy's manifest is a symlink, larger than 1 MiB or not a file (when the copy was written is unknown)", async () => {
    const outside = await outsideDir({
      "manifest.json": JSON.stringify({ completedAt: daysAgo(30).toISOString() }),
    });
    try {
      const [linked, large, fifo] = [
        await closedSession(stack),
        await closedSession(stack),
        await closedSession(stack),
      ];
      const manifest = (scope: string) => path.join(currentDir(stack, scope), "manifest.json");
      await rm(manifest(linked.scope));
      await symlink(path.join(outside.path, "manifest.json"), manifest(linked.scope));
      // Valid JSON saying the copy is old, padded past the limit: read whole, it would let the copy expire.
      await writeFile(
        manifest(large.scope),
        JSON.stringify({ completedAt: daysAgo(30).toISOString(), pad: "x".repeat(1024 * 1024) }),
      );
      await rm(manifest(fifo.scope));
      execFileSync("mkfifo", [manifest(fifo.scope)]);
      for (const s of [linked, large, fifo]) await utimes(currentDir(stack, s.scope), daysAgo(9), daysAgo(9));
      const report = await sweep(stack, null);
      for (const s of [linked, large, fifo])
        expect(outcomeOf(report, copyId(s.scope))).toBe("copy_manifest_unreadable");
      expect(await outside.changes()).toEqual([]);
    } finally {
      await outside.remove();
    }
  });
});

describe("liveness in the Paperclip server", () => {
  it.each(["executing", "initializing", "warm", "closing"])(
    "keeps the copy of a session that is %s",
    async (state) => {
      const s = await closedSession(stack);
      await reportLive(stack, [{ id: s.scope, state }]);
      await expectKept(s.scope, "session_live");
      await reportLive(stack);
    },
  );

  it("keeps the copy while the report says a cleanup activation is pending for the session", async () => {
    const s = await closedSession(stack);
    await reportLive(stack, [{ id: s.scope, state: "closing", cleanupPending: true }]);
    await expectKept(s.scope, "cleanup_activation_pending");
    // A session that is no longer live may still be listed for its pending cleanup alone.
    await reportLive(stack, [{ id: s.scope, cleanupPending: true }]);
    await expectKept(s.scope, "cleanup_activation_pending");
    await reportLive(stack);
  });

  it("refuses a reported session with neither a live state nor a pending cleanup, naming the field", async () => {
    const response = await stack.api("POST", "/v1/events", {
      events: [
        { type: "native_sessions.live", sessions: [{ id: "s1" }], reportedAt: new Date().toISOString() },
      ],
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      error: "RECLAIM_ERR_VALIDATION",
      field: "events.0.sessions.0.state",
    });
  });

  it("keeps the copy while a cleanup activation is pending in its directory", async () => {
    const pending = await closedSession(stack);
    const free = await closedSession(stack);
    await writeFile(path.join(sessionDir(stack, pending.scope), "cleanup-activation.json"), "{}");
    const report = await sweep(stack, null);
    expect(outcomeOf(report, copyId(pending.scope))).toBe("cleanup_activation_pending");
    expect(outcomeOf(report, copyId(free.scope))).toBe("removed");
  });

  it("unknown (no report, or one older than RECLAIM_LIVENESS_MAX_AGE_SECONDS) keeps every copy", async () => {
    const s = await closedSession(stack);
    await stack.db.reclaimNativeSessionLiveness.deleteMany({});
    await expectKept(s.scope, "liveness_unknown");
    await reportLive(stack, [], new Date(Date.now() - 301_000));
    await expectKept(s.scope, "liveness_unknown");
    await reportLive(stack, [], new Date());
    expect(outcomeOf(await sweep(stack, null), copyId(s.scope))).toBe("removed");
  });

  it("a report dated in the future counts from when it was received: it goes stale, and correctly dated reports replace it", async () => {
    const clock = new TestClock(Date.now());
    const skewed = await startStack({ clock });
    try {
      // Only this test's sweeps run here: the start-up sweep must not come due when the clock moves.
      await skewed.db.reclaimDeadline.deleteMany({ where: { domain: DOMAIN } });
      const s = await closedSession(skewed);
      const outcome = async () => outcomeOf(await sweep(skewed, null), copyId(s.scope));
      // The Paperclip server's clock runs a day ahead.
      await reportLive(skewed, [{ id: s.scope, state: "warm" }], new Date(clock.now().getTime() + DAY_MS));
      expect(await outcome()).toBe("session_live");
      clock.advance(301_000);
      expect(await outcome()).toBe("liveness_unknown");
      await reportLive(skewed, [], clock.now());
      expect(await outcome()).toBe("removed");
    } finally {
      await skewed.stop();
    }
  });

  it("an older report arriving late does not replace a newer one", async () => {
    await reportLive(stack, [{ id: "a", state: "warm" }], new Date());
    await reportLive(stack, [], daysAgo(1));
    const row = await stack.db.reclaimNativeSessionLiveness.findUnique({ where: { instance: "instance" } });
    expect(row!.sessions).toEqual([{ id: "a", state: "warm" }]);
    await reportLive(stack);
  });

  it("reports with a state that is not a live state are refused, naming the field", async () => {
    const response = await stack.api("POST", "/v1/events", {
      events: [
        {
          type: "native_sessions.live",
          sessions: [{ id: "x", state: "sleeping" }],
          reportedAt: new Date().toISOString(),
        },
      ],
    });
    expect(response.status).toBe(400);
    expect(JSON.stringify(response.body)).toContain("events.0.sessions.0.state");
  });
});

describe("what is never touched", () => {
  it("a symlinked session directory or copy is neither followed nor removed", async () => {
    const s = await closedSession(stack);
    const target = path.join(stack.instanceRoot, `precious-${s.scope}`);
    await writeTree(target, { "keep.txt": "mine" }, daysAgo(30));
    await rm(currentDir(stack, s.scope), { recursive: true });
    await symlink(target, currentDir(stack, s.scope));
    const linkedScope = newScope();
    await mkdir(path.dirname(sessionDir(stack, linkedScope)), { recursive: true });
    await symlink(sessionDir(stack, s.scope), sessionDir(stack, linkedScope));
    const report = await sweep(stack, null);
    expect(outcomeOf(report, copyId(s.scope))).toBe("symlink");
    // The link is the session directory itself: the report names it.
    expect(outcomeOf(report, `runtime/paperclip-runner/durable-sessions/${linkedScope}`)).toBe("symlink");
    expect(outcomeOf(report, copyId(linkedScope))).toBeUndefined();
    expect(existsSync(path.join(target, "keep.txt"))).toBe(true);
  });
});

describe("dry run and company diagnosis", () => {
  it("lists each of a company's sessions with its outcome and deletes nothing", async () => {
    const companyId = randomUUID();
    const gone = await closedSession(stack, { companyId });
    const kept = await closedSession(stack, { companyId, issueStatus: "in_progress" });
    const other = await closedSession(stack);
    const report = await sweep(stack, companyId, { dryRun: true });
    expect(report).toMatchObject({ dryRun: true, checked: 2, candidates: 1, removed: 0, reclaimedBytes: 0 });
    expect(outcomeOf(report, copyId(gone.scope))).toBe("candidate");
    expect(outcomeOf(report, copyId(kept.scope))).toBe("issue_open");
    expect(outcomeOf(report, copyId(other.scope))).toBeUndefined();
    expect(existsSync(currentDir(stack, gone.scope))).toBe(true);
    expect(await stack.db.agentTaskSession.findUnique({ where: { id: gone.taskSessionId } })).not.toBeNull();
  });
});

describe("controls", () => {
  it("_DAYS sets the window (minimum 1)", async () => {
    await withStack({ env: { PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_DAYS: "2" } }, async (tuned) => {
      const s = await closedSession(tuned, { issueClosedDaysAgo: 3, runFinishedDaysAgo: 3, copyAgeDays: 3 });
      expect(outcomeOf(await sweep(tuned, null), copyId(s.scope))).toBe("removed");
    });
    await expectRefused("PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_DAYS", "0");
  });

  it("PAPERCLIP_NATIVE_RUNNER_EVIDENCE_RETENTION_DAYS sets the evidence window (minimum 1)", async () => {
    await withStack({ env: { PAPERCLIP_NATIVE_RUNNER_EVIDENCE_RETENTION_DAYS: "2" } }, async (tuned) => {
      const scope = newScope();
      const old = await writeQuarantine(tuned, scope, 3);
      const young = await writeArchive(tuned, scope, 1);
      const report = await sweep(tuned, null);
      expect(outcomeOf(report, old.id)).toBe("removed");
      expect(outcomeOf(report, young.id)).toBe("within_retention");
    });
    await expectRefused("PAPERCLIP_NATIVE_RUNNER_EVIDENCE_RETENTION_DAYS", "0");
  });

  it("_ENABLED=false stops expiry: no sweep is served or scheduled, copies and evidence stay", async () => {
    await withStack({ env: { PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_ENABLED: "false" } }, async (off) => {
      const s = await closedSession(off);
      const entry = await writeQuarantine(off, s.scope, 30);
      const response = await off.api("POST", "/v1/sweeps", { domain: DOMAIN, companyId: null });
      expect(response.status).toBe(409);
      expect(await off.db.reclaimDeadline.count({ where: { domain: DOMAIN } })).toBe(0);
      expect(existsSync(currentDir(off, s.scope))).toBe(true);
      expect(existsSync(entry.dir)).toBe(true);
    });
  });

  it("_DRY_RUN reports candidates without deleting copies or task sessions", async () => {
    await withStack({ env: { PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_DRY_RUN: "true" } }, async (dry) => {
      const s = await closedSession(dry);
      const report = await sweep(dry, null);
      expect(report.dryRun).toBe(true);
      expect(outcomeOf(report, copyId(s.scope))).toBe("candidate");
      expect(existsSync(currentDir(dry, s.scope))).toBe(true);
      expect(await dry.db.agentTaskSession.findUnique({ where: { id: s.taskSessionId } })).not.toBeNull();
    });
  });
});

describe("logs", () => {
  it("each batch that finds candidates logs them with candidate and reclaimed bytes, cleared task sessions and skip reasons", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger("info", {}, (line) => lines.push(JSON.parse(line)));
    await withStack({ log }, async (logged) => {
      const gone = await closedSession(logged);
      await closedSession(logged, { issueStatus: "in_progress" });
      await sweep(logged, null);
      const line = lines.find((l) => l.event === "native_session_backups.retention");
      expect(line).toMatchObject({
        dryRun: false,
        candidates: [copyId(gone.scope)],
        candidateBytes: expect.any(Number),
        reclaimedBytes: expect.any(Number),
        clearedTaskSessions: 1,
        skipped: { issue_open: 1 },
      });
      expect(line!.candidateBytes).toBeGreaterThanOrEqual(64 * 1024);
      expect(line!.reclaimedBytes).toBe(line!.candidateBytes);
    });
  });
});
