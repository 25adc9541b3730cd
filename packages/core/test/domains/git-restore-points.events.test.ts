/**
 * When git cache expiration looks at a workspace, and what it says (spec: deadlines and the
 * events that wake a workspace; logs and report entries per workspace), through the worker:
 * `issue.changed` (of the source issue or any issue of its tree), `run.changed` of a run that
 * ended and `workspace.changed` each wake the workspace they concern and no other (a run that
 * starts wakes nothing); one log line per
 * workspace acted on, with outcome, reason, candidate and reclaimed bytes, and the report
 * entries that match it; a dry run reports the candidate and changes nothing.
 */
import { existsSync } from "node:fs";
import { createLogger } from "@reclaim/core";
import { startStack, type Stack } from "@reclaim/testkit";
import {
  DOMAIN,
  dirtyWorkspace,
  gitEnv,
  insertIssue,
  workspaceEntry,
} from "@reclaim/testkit/src/fixtures/git-workspaces";

interface LogLine {
  msg: string;
  event?: string;
  workspaceId?: string;
  outcome?: string;
  reason?: string | null;
  candidateBytes?: number;
  reclaimedBytes?: number;
}

function capturingStack(env: Record<string, string>) {
  const lines: LogLine[] = [];
  const log = createLogger("info", {}, (line) => lines.push(JSON.parse(line) as LogLine));
  return { lines, start: () => startStack({ env, log }) };
}

async function post(stack: Stack, event: Record<string, unknown>) {
  const r = await stack.api("POST", "/v1/events", { events: [event] });
  expect(r.status).toBe(202);
}

const entriesOf = async (stack: Stack, ws: string) =>
  (await stack.db.reclaimBatchReport.findMany({ where: { domain: DOMAIN } })).flatMap((r) =>
    ((r.entries ?? []) as { id: string }[]).filter((e) => e.id === `workspace/${ws}`),
  );

describe("events wake the workspace they concern", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: gitEnv(true), log: createLogger("error") });
  });
  afterAll(async () => stack?.stop());

  /** A closed tree whose workspace waits for a change (an open issue elsewhere is bound to it). */
  async function waiting(branch: string) {
    const t = await dirtyWorkspace(stack, branch, { closedDaysAgo: 5 });
    const bound = await insertIssue(stack.db, t.project.companyId, { closedDaysAgo: null });
    await stack.db.issue.update({ where: { id: bound }, data: { executionWorkspaceId: t.ws } });
    return { ...t, bound };
  }

  it("issue.changed of an issue of the tree, run.changed of a run that ended (not one that starts) and workspace.changed", async () => {
    const byIssue = await waiting("task-issue-event");
    const child = await insertIssue(stack.db, byIssue.project.companyId, {
      parentId: byIssue.issueId,
      closedDaysAgo: 5,
    });
    const byRun = await waiting("task-run-event");
    const byWorkspace = await waiting("task-workspace-event");
    await stack.idle();
    for (const t of [byIssue, byRun, byWorkspace]) expect(await entriesOf(stack, t.ws)).toEqual([]);

    // A descendant's change wakes the workspace of the tree's root (and nothing else).
    await post(stack, { type: "issue.changed", companyId: byIssue.project.companyId, issueId: child });
    expect(await workspaceEntry(stack, byIssue.project.companyId, byIssue.ws)).toEqual(
      expect.objectContaining({ outcome: "skipped", reason: "issue_bound" }),
    );
    const run = await stack.db.heartbeatRun.create({
      data: {
        companyId: byRun.project.companyId,
        status: "running",
        contextSnapshot: { issueId: byRun.issueId },
      },
    });
    // A run that starts only delays expiry: it wakes nothing (every look reads the runs again).
    await post(stack, {
      type: "run.changed",
      companyId: byRun.project.companyId,
      runId: run.id,
      status: "running",
    });
    await stack.idle();
    expect(await entriesOf(stack, byRun.ws)).toEqual([]);
    await stack.db.heartbeatRun.update({
      where: { id: run.id },
      data: { status: "succeeded", finishedAt: new Date() },
    });
    await post(stack, {
      type: "run.changed",
      companyId: byRun.project.companyId,
      runId: run.id,
      status: "succeeded",
    });
    expect(await workspaceEntry(stack, byRun.project.companyId, byRun.ws)).toEqual(
      expect.objectContaining({ outcome: "skipped", reason: "issue_bound" }),
    );
    // The bound issue closes, and Paperclip says the workspace changed: now it expires.
    await stack.db.issue.update({
      where: { id: byWorkspace.bound },
      data: { status: "done", completedAt: new Date(Date.now() - 5 * 86_400_000) },
    });
    await post(stack, {
      type: "workspace.changed",
      companyId: byWorkspace.project.companyId,
      workspaceId: byWorkspace.ws,
    });
    expect(await workspaceEntry(stack, byWorkspace.project.companyId, byWorkspace.ws, "removed")).toEqual(
      expect.objectContaining({ reason: "terminal" }),
    );
    await stack.idle();
    expect(existsSync(byWorkspace.wt)).toBe(false);
    // Each event woke only its own workspace: one look each.
    for (const t of [byIssue, byRun]) expect(await entriesOf(stack, t.ws)).toHaveLength(1);
  });
});

describe("logs and report entries", () => {
  const capture = capturingStack(gitEnv(true));
  let stack: Stack;
  beforeAll(async () => {
    stack = await capture.start();
  });
  afterAll(async () => stack?.stop());

  it("one line per workspace acted on, with outcome, reason, candidate and reclaimed bytes; the report's entries match", async () => {
    const removed = await dirtyWorkspace(stack, "task-logged", { closedDaysAgo: 5 });
    const kept = await dirtyWorkspace(stack, "task-logged-kept", { closedDaysAgo: 1 });
    for (const t of [removed, kept]) {
      await post(stack, { type: "issue.changed", companyId: t.project.companyId, issueId: t.issueId });
    }
    const candidate = await workspaceEntry(stack, removed.project.companyId, removed.ws, "candidate");
    const gone = await workspaceEntry(stack, removed.project.companyId, removed.ws, "removed");
    expect(candidate).toEqual(expect.objectContaining({ reason: "terminal", bytes: expect.any(Number) }));
    expect(gone).toEqual(expect.objectContaining({ reason: "terminal", bytes: expect.any(Number) }));
    expect(candidate.bytes).toBeGreaterThan(0);
    expect(gone.bytes).toBeGreaterThan(0);
    expect(await workspaceEntry(stack, kept.project.companyId, kept.ws, "skipped")).toEqual(
      expect.objectContaining({ reason: "terminal_delay" }),
    );
    await stack.idle();
    const lines = capture.lines.filter((l) => l.event === "execution_workspace.git_cache_expiration");
    expect(lines.filter((l) => l.workspaceId === removed.ws)).toEqual([
      expect.objectContaining({
        outcome: "removed",
        reason: "terminal",
        candidateBytes: candidate.bytes,
        reclaimedBytes: gone.bytes,
      }),
    ]);
  });
});

describe("dry run", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      env: gitEnv(true, { PAPERCLIP_GIT_CACHE_EXPIRATION_DRY_RUN: "true" }),
      log: createLogger("error"),
    });
  });
  afterAll(async () => stack?.stop());

  it("reports the candidate with its bytes, and saves, archives and removes nothing", async () => {
    const t = await dirtyWorkspace(stack, "task-dry", { closedDaysAgo: 5 });
    await post(stack, { type: "issue.changed", companyId: t.project.companyId, issueId: t.issueId });
    const entry = await workspaceEntry(stack, t.project.companyId, t.ws, "candidate");
    expect(entry).toEqual(expect.objectContaining({ reason: "terminal" }));
    expect(entry.bytes).toBeGreaterThan(0);
    await stack.idle();
    expect(existsSync(t.wt)).toBe(true);
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
    expect(row.status).toBe("active");
    expect(
      await stack.db.executionWorkspaceRestorePoint.count({ where: { executionWorkspaceId: t.ws } }),
    ).toBe(0);
  });
});
