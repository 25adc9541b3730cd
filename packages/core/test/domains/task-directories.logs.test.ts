/**
 * Isolated task directories, the log lines of "Controls and logs": each open or pending
 * workspace logs `execution_workspace.task_directory_retention` (outcome `removed`, `dry_run`
 * or `skipped`, reason, candidate bytes, reclaimed bytes); each directory the walk inspects
 * logs `execution_workspace.task_directory_cleanup` (outcome `removed`,
 * `preserved_and_removed`, `dry_run` or `skipped`, reason, bytes); each reopen that restores
 * a directory logs `execution_workspace.task_directory_restore`. Real scheduler and worker,
 * their log lines captured as JSON.
 */
import fs from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { createLogger, treeStats } from "@reclaim/core";
import { startStack, sweepDomain, waitFor, type Stack, type StackOptions } from "@reclaim/testkit";
import {
  closeEvent,
  issueDirectory,
  removed,
  task,
  TASK_ENV,
  type Task,
} from "@reclaim/testkit/src/fixtures/task-directories";

type Line = Record<string, unknown>;
const DOMAIN = "task-directories";
const RETENTION = "execution_workspace.task_directory_retention";
const CLEANUP = "execution_workspace.task_directory_cleanup";
const RESTORE = "execution_workspace.task_directory_restore";

async function logged(env: Record<string, string>, seed?: StackOptions["seed"]) {
  const lines: Line[] = [];
  const stack = await startStack({
    env,
    seed,
    log: createLogger("info", {}, (line) => lines.push(JSON.parse(line) as Line)),
  });
  const of = (event: string, issueId: string) =>
    lines.filter((l) => l.event === event && l.issueId === issueId);
  const waitLine = (event: string, issueId: string, what: (l: Line) => boolean = () => true) =>
    waitFor(() => of(event, issueId).find(what) ?? null, {
      what: `${event} of ${issueId}`,
      timeoutMs: 30_000,
    });
  /** The directory's cleanup line says `outcome`, `reason` and `bytes`. */
  const cleanup = async (issueId: string, outcome: string, reason: string | null, bytes: number) =>
    expect(await waitLine(CLEANUP, issueId)).toMatchObject({ outcome, reason, bytes });
  return { stack, of, waitLine, cleanup };
}

/** The walk over every directory of the instance, page after page (a requested sweep). */
async function walkAll(stack: Stack, body: Record<string, unknown> = {}): Promise<void> {
  let cursor: string | null = null;
  do {
    cursor =
      (await sweepDomain(stack, DOMAIN, null, { ...body, ...(cursor ? { cursor } : {}) })).nextCursor ?? null;
  } while (cursor);
}

const bytesOf = async (dir: string) => (await treeStats(dir)).allocatedBytes;

/** A closed row its issue is still bound to (what the walk saves and removes). */
async function closedBound(stack: Pick<Stack, "db" | "instanceRoot">): Promise<Task> {
  const t = await task(stack);
  await stack.db.executionWorkspace.update({
    where: { id: t.workspace },
    data: { status: "archived", closedAt: new Date() },
  });
  return t;
}

describe("with removal on", () => {
  let log: Awaited<ReturnType<typeof logged>>;
  let stack: Stack;
  beforeAll(async () => {
    log = await logged(TASK_ENV);
    stack = log.stack;
  });
  afterAll(async () => stack?.stop());

  it("task_directory_retention: removed with its candidate and reclaimed bytes, skipped with its reason", async () => {
    const gone = await task(stack);
    const bytes = await bytesOf(gone.dir);
    const kept = await task(stack);
    await stack.db.issue.update({ where: { id: kept.issue }, data: { executionWorkspaceId: null } });
    await closeEvent(stack, gone);
    await closeEvent(stack, kept);
    await removed(stack, gone);
    expect(await log.waitLine(RETENTION, gone.issue)).toMatchObject({
      companyId: gone.company,
      executionWorkspaceId: gone.workspace,
      outcome: "removed",
      reason: null,
      candidateBytes: bytes,
      reclaimedBytes: bytes,
    });
    expect(await log.waitLine(RETENTION, kept.issue)).toMatchObject({
      executionWorkspaceId: kept.workspace,
      outcome: "skipped",
      reason: "issue_not_bound",
      candidateBytes: 0,
      reclaimedBytes: 0,
    });
    expect(log.of(RETENTION, gone.issue)).toHaveLength(1);
    expect(log.of(RETENTION, kept.issue)).toHaveLength(1);
  });

  it("task_directory_cleanup: each directory the walk inspects, removed, preserved_and_removed or skipped with its reason, with its bytes", async () => {
    const orphan = await issueDirectory(stack, { issue: "gone" });
    const orphanBytes = await bytesOf(orphan.dir);
    const open = await issueDirectory(stack, { issue: "open" });
    const openBytes = await bytesOf(open.dir);
    const saved = await closedBound(stack);
    const savedBytes = await bytesOf(saved.dir);
    const busy = await closedBound(stack);
    const busyBytes = await bytesOf(busy.dir);
    await stack.db.heartbeatRun.create({
      data: { companyId: busy.company, status: "running", contextSnapshot: { issueId: busy.issue } },
    });
    const active = await task(stack, { status: "in_progress" });
    const activeBytes = await bytesOf(active.dir);
    await walkAll(stack);

    expect(await log.waitLine(CLEANUP, orphan.issue)).toMatchObject({
      companyId: orphan.company,
      outcome: "removed",
      reason: null,
      bytes: orphanBytes,
    });
    await log.cleanup(open.issue, "skipped", "issue_open", openBytes);
    await log.cleanup(saved.issue, "preserved_and_removed", null, savedBytes);
    await log.cleanup(busy.issue, "skipped", "live_or_unresolved_consumer", busyBytes);
    // An open workspace's directory: the walk hands it to the row, which logs its retention.
    await log.cleanup(active.issue, "skipped", "workspace_open", activeBytes);
    expect(await log.waitLine(RETENTION, active.issue)).toMatchObject({
      outcome: "skipped",
      reason: "issue_open",
    });
    for (const d of [orphan, open, saved, busy, active]) expect(log.of(CLEANUP, d.issue)).toHaveLength(1);
  });

  it("task_directory_restore: each reopen, restored, failed or fresh", async () => {
    const reopen = (t: Task, reason: string) =>
      stack.api("POST", `/v1/companies/${t.company}/execution-workspaces/${t.workspace}/reopen?wait=60`, {
        reason,
      });
    const a = await task(stack);
    const b = await task(stack);
    const c = await task(stack);
    for (const t of [a, b, c]) await closeEvent(stack, t);
    for (const t of [a, b, c]) await removed(stack, t);
    const rp = await stack.db.executionWorkspaceRestorePoint.findFirstOrThrow({
      where: { executionWorkspaceId: a.workspace },
    });
    expect((await reopen(a, "comment")).body.outcome).toBe("restored");
    expect(await log.waitLine(RESTORE, a.issue)).toMatchObject({
      companyId: a.company,
      executionWorkspaceId: a.workspace,
      trigger: "comment",
      outcome: "restored",
      reason: null,
      path: a.dir,
      restorePointId: rp.id,
    });
    await stack.db.executionWorkspaceRestorePoint.updateMany({
      where: { executionWorkspaceId: b.workspace },
      data: { status: "deleted" },
    });
    expect((await reopen(b, "run")).body.outcome).toBe("fresh");
    expect(await log.waitLine(RESTORE, b.issue)).toMatchObject({
      trigger: "run",
      outcome: "fresh",
      path: b.dir,
      warning: expect.stringContaining("no longer available"),
    });
    await mkdir(c.dir);
    await writeFile(path.join(c.dir, "other.txt"), "someone else's\n");
    expect((await reopen(c, "agent_update")).body.outcome).toBe("failed");
    expect(await log.waitLine(RESTORE, c.issue)).toMatchObject({
      trigger: "agent_update",
      outcome: "failed",
      reason: "task_directory_in_the_way",
      path: c.dir,
    });
  });
});

describe("in a dry run", () => {
  it("a directory judged in one batch as its workspace's and as the walk's is walked once: both lines carry that walk's bytes", async () => {
    const log = await logged({ ...TASK_ENV, PAPERCLIP_TASK_DIRECTORY_RETENTION_DRY_RUN: "true" });
    const { stack } = log;
    try {
      await stack.idle(); // the start-up walk, before the directory exists
      const t = await task(stack);
      const bytes = await bytesOf(t.dir);
      const lstats = jest.spyOn(fs, "lstatSync");
      // The issue closes: its directory's item and its workspace's item are due together.
      await closeEvent(stack, t);
      expect(await log.waitLine(RETENTION, t.issue)).toMatchObject({
        outcome: "dry_run",
        candidateBytes: bytes,
      });
      await log.cleanup(t.issue, "skipped", "workspace_open", bytes);
      await stack.idle();
      // One lstat of a file inside: the plan's (through its directory's descriptor); the
      // cleanup line did not walk the tree again.
      const ofFile = lstats.mock.calls.filter(([at]) => String(at).endsWith("/summary.md"));
      expect(ofFile).toHaveLength(1);
    } finally {
      jest.restoreAllMocks();
      await stack.stop();
    }
  });

  it("the start-up walk's lines say dry_run, with the candidate bytes and nothing reclaimed; a dry-run sweep schedules nothing", async () => {
    let open!: Task;
    let bound!: Task;
    let orphan!: { company: string; issue: string; dir: string };
    const log = await logged(
      { ...TASK_ENV, PAPERCLIP_TASK_DIRECTORY_RETENTION_DRY_RUN: "true" },
      async (ctx) => {
        open = await task(ctx);
        bound = await closedBound(ctx);
        orphan = await issueDirectory(ctx, { issue: "gone" });
      },
    );
    const { stack } = log;
    try {
      const openBytes = await bytesOf(open.dir);
      const boundBytes = await bytesOf(bound.dir);
      const orphanBytes = await bytesOf(orphan.dir);
      expect(await log.waitLine(RETENTION, open.issue)).toMatchObject({
        outcome: "dry_run",
        reason: null,
        candidateBytes: openBytes,
        reclaimedBytes: 0,
      });
      await log.cleanup(open.issue, "skipped", "workspace_open", openBytes);
      await log.cleanup(orphan.issue, "dry_run", null, orphanBytes);
      await log.cleanup(bound.issue, "dry_run", null, boundBytes);
      expect(await log.waitLine(RETENTION, bound.issue)).toMatchObject({
        outcome: "dry_run",
        candidateBytes: boundBytes,
        reclaimedBytes: 0,
      });
      for (const d of [open, bound, orphan]) expect(await bytesOf(d.dir)).toBeGreaterThan(0);

      const later = await issueDirectory(stack, { issue: "gone" });
      await walkAll(stack, { dryRun: true });
      await stack.idle();
      expect(log.of(CLEANUP, later.issue)).toEqual([]);
      expect(await stack.db.reclaimItemDeadline.count({ where: { itemId: `dir:${later.issue}` } })).toBe(0);
    } finally {
      await stack.stop();
    }
  });
});
