/**
 * Git cache expiration through the worker: a change made between the capture and the locked
 * verification rolls back; a descendant open in its own workspace does not keep its parent's;
 * idle expiration of an open tree and its reopen on the next run; an expired restore point
 * reopens fresh with the warning; open trees cost no checks before their deadline.
 */
import { existsSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import path from "node:path";
import { createLogger, FaultPoints, storageFor } from "@reclaim/core";
import { StorageKey } from "@reclaim/shared";
import { readPaperclipStorage } from "../../src/storage";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  addWorktree,
  DOMAIN,
  dirtyWorkspace,
  git,
  gitEnv,
  insertGitWorkspace,
  insertIssue,
  wakeIssue as wake,
  workspaceEntry as entryOf,
} from "@reclaim/testkit/src/fixtures/git-workspaces";
import { reopen } from "./git-restore-points.fixtures";

const DAY = 86_400_000;

/** When the workspace is looked at again, from now (ms). */
async function nextLookIn(stack: Stack, ws: string): Promise<number | null> {
  const item = await stack.db.reclaimItemDeadline.findUniqueOrThrow({
    where: { domain_itemId: { domain: DOMAIN, itemId: ws } },
  });
  return item.dueAt === null ? null : item.dueAt.getTime() - Date.now();
}

describe("rollback", () => {
  let stack: Stack;
  let target: string | null = null;
  let afterVerification: string | null = null;
  let failAfterArchive = false;
  beforeAll(async () => {
    stack = await startStack({
      env: gitEnv(true),
      log: createLogger("error"),
      faults: FaultPoints.of({
        // After the restore point was sealed and read back, before the verification under the
        // locks: an agent writes a file directly (git's lock files do not stop that).
        "git-restore-points.saved": async () => {
          if (target) await writeFile(path.join(target, "late.txt"), "written after the capture\n");
        },
        // After the locked verification, before the archive commits and the rename: a process
        // outside git (git's lock files do not stop it) writes into the worktree.
        "git-restore-points.verified": async () => {
          if (afterVerification)
            await writeFile(
              path.join(afterVerification, "after-verify.txt"),
              "written after the verification\n",
            );
        },
        // After the archive committed, before the rename: the expiration stops there.
        "git-restore-points.archived": () => {
          if (failAfterArchive) throw new Error("stopped after the archive");
        },
      }),
    });
  });
  afterAll(async () => stack?.stop());

  it("a change made between the capture and the locked verification rolls back and keeps the worktree", async () => {
    const { project, wt, issueId, ws } = await dirtyWorkspace(stack, "task-rollback", { closedDaysAgo: 5 });
    target = wt;
    await wake(stack, project.companyId, issueId);
    const entry = await entryOf(stack, project.companyId, ws, "rolled_back");
    expect(entry.reason).toBe("worktree_changed");
    // Something is writing into it: captured afresh in 15 minutes.
    expect(Math.abs((await nextLookIn(stack, ws))! - 15 * 60_000)).toBeLessThan(120_000);
    expect(await readFile(path.join(wt, "late.txt"), "utf8")).toBe("written after the capture\n");
    expect(await readFile(path.join(wt, "notes.md"), "utf8")).toBe("untracked\n");
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
    expect(row.status).toBe("active");
    // The restore point was dropped, never activated.
    const points = await stack.db.executionWorkspaceRestorePoint.findMany({
      where: { executionWorkspaceId: ws },
    });
    expect(points.length).toBe(1);
    expect(points[0]!.activatedAt).toBeNull();
    expect(["delete_requested", "deleted"]).toContain(points[0]!.status);
    // No git lock file is left behind: the agent's git works.
    await git(wt, ["add", "late.txt"]);
    target = null;
  });

  it("a change made after the locked verification and before the rename is never removed: the tree renamed aside is verified again, moved back, and the workspace made active again", async () => {
    const { project, wt, issueId, ws } = await dirtyWorkspace(stack, "task-after-verify", {
      closedDaysAgo: 5,
    });
    afterVerification = wt;
    try {
      await wake(stack, project.companyId, issueId);
      expect(await entryOf(stack, project.companyId, ws, "rolled_back")).toEqual(
        expect.objectContaining({ reason: "worktree_changed" }),
      );
    } finally {
      afterVerification = null;
    }
    expect(await readFile(path.join(wt, "after-verify.txt"), "utf8")).toBe(
      "written after the verification\n",
    );
    expect(await readFile(path.join(wt, "notes.md"), "utf8")).toBe("untracked\n");
    expect((await git(wt, ["log", "-1", "--format=%s"])).trim()).toBe("unpushed");
    expect((await readdir(path.dirname(wt))).filter((n) => n.startsWith(".expired-"))).toEqual([]);
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
    expect(row.status).toBe("active");
    const metadata = row.metadata as Record<string, unknown>;
    expect(metadata.gitCacheRestoration).toBeUndefined();
    expect(metadata.gitCacheExpirationRemoval).toBeUndefined();
    for (const p of await stack.db.executionWorkspaceRestorePoint.findMany({
      where: { executionWorkspaceId: ws },
    })) {
      expect(["superseded", "deleted"]).toContain(p.status);
    }
    expect(Math.abs((await nextLookIn(stack, ws))! - 15 * 60_000)).toBeLessThan(120_000);
    // The registration is intact and no lock file is left: the agent's git works.
    await git(wt, ["add", "after-verify.txt"]);
    await git(wt, ["commit", "-q", "-m", "kept"]);
  });

  it("a checkout changed after the archive and before its removal is never removed: the workspace is made active again", async () => {
    const { project, wt, issueId, ws } = await dirtyWorkspace(stack, "task-late-change", {
      closedDaysAgo: 5,
    });
    failAfterArchive = true;
    try {
      await wake(stack, project.companyId, issueId);
      expect(await entryOf(stack, project.companyId, ws, "failed")).toEqual(
        expect.objectContaining({ reason: "expiration_failed" }),
      );
    } finally {
      failAfterArchive = false;
    }
    const archived = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
    expect(archived.status).toBe("archived");
    expect((archived.metadata as Record<string, { state?: string }>).gitCacheExpirationRemoval?.state).toBe(
      "pending",
    );
    // The run that asked for nothing: an agent still writes into the archived worktree.
    await writeFile(path.join(wt, "after-archive.txt"), "written after the archive\n");
    await wake(stack, project.companyId, issueId);
    expect(await entryOf(stack, project.companyId, ws, "rolled_back")).toEqual(
      expect.objectContaining({ reason: "worktree_changed" }),
    );
    expect(Math.abs((await nextLookIn(stack, ws))! - 15 * 60_000)).toBeLessThan(120_000);
    expect(await readFile(path.join(wt, "after-archive.txt"), "utf8")).toBe("written after the archive\n");
    expect(await readFile(path.join(wt, "notes.md"), "utf8")).toBe("untracked\n");
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
    expect(row.status).toBe("active");
    const metadata = row.metadata as Record<string, unknown>;
    expect(metadata.gitCacheRestoration).toBeUndefined();
    expect(metadata.gitCacheExpirationRemoval).toBeUndefined();
    for (const p of await stack.db.executionWorkspaceRestorePoint.findMany({
      where: { executionWorkspaceId: ws },
    })) {
      expect(["superseded", "deleted"]).toContain(p.status);
    }
    await git(wt, ["add", "after-archive.txt"]);
  });
});

describe("the issues that use a workspace, idle expiration, fresh reopen", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: gitEnv(true), log: createLogger("error") });
  });
  afterAll(async () => stack?.stop());

  it("a descendant still open in its own workspace does not keep the parent's worktree", async () => {
    const parent = await dirtyWorkspace(stack, "task-parent", { closedDaysAgo: 4 });
    const child = await insertIssue(stack.db, parent.project.companyId, {
      parentId: parent.issueId,
      closedDaysAgo: null,
    });
    const childWt = await addWorktree(parent.project, "task-child");
    const childWs = await insertGitWorkspace(stack.db, {
      project: parent.project,
      cwd: childWt,
      branch: "task-child",
      sourceIssueId: child,
    });
    await wake(stack, parent.project.companyId, child);
    await waitFor(async () => !existsSync(parent.wt), { what: "the parent's worktree removed" });
    expect(existsSync(childWt)).toBe(true);
    const childRow = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: childWs } });
    expect(childRow.status).toBe("active");
  });

  it("a descendant bound to the parent's workspace keeps it while open", async () => {
    const parent = await dirtyWorkspace(stack, "task-shared", { closedDaysAgo: 4 });
    const child = await insertIssue(stack.db, parent.project.companyId, {
      parentId: parent.issueId,
      closedDaysAgo: null,
    });
    await stack.db.issue.update({ where: { id: child }, data: { executionWorkspaceId: parent.ws } });
    await wake(stack, parent.project.companyId, child);
    const entry = await entryOf(stack, parent.project.companyId, parent.ws);
    expect(entry).toEqual(expect.objectContaining({ outcome: "skipped", reason: "idle_pending" }));
    expect(existsSync(parent.wt)).toBe(true);
  });

  it("an open tree nothing touched for the idle days is removed, and the next run reopens it", async () => {
    const idle = await dirtyWorkspace(
      stack,
      "task-idle",
      { closedDaysAgo: null, updatedDaysAgo: 10 },
      { lastUsedDaysAgo: 10 },
    );
    await wake(stack, idle.project.companyId, idle.issueId);
    const entry = await entryOf(stack, idle.project.companyId, idle.ws, "removed");
    expect(entry.reason).toBe("idle");
    await waitFor(async () => !existsSync(idle.wt), { what: "the idle worktree removed" });
    const reopened = await stack.api(
      "POST",
      `/v1/companies/${idle.project.companyId}/execution-workspaces/${idle.ws}/reopen?wait=90`,
      { reason: "run" },
    );
    expect(reopened.body).toEqual(expect.objectContaining({ outcome: "restored", path: idle.wt }));
    expect(await readFile(path.join(idle.wt, "notes.md"), "utf8")).toBe("untracked\n");
    expect((await git(idle.wt, ["log", "-1", "--format=%s"])).trim()).toBe("unpushed");
  });

  it("a recently touched open tree waits for its idle deadline, with no earlier check", async () => {
    const busy = await dirtyWorkspace(
      stack,
      "task-busy",
      { closedDaysAgo: null, updatedDaysAgo: 2 },
      { lastUsedDaysAgo: 2 },
    );
    await wake(stack, busy.project.companyId, busy.issueId);
    const entry = await entryOf(stack, busy.project.companyId, busy.ws);
    expect(entry.reason).toBe("idle_pending");
    const item = await stack.db.reclaimItemDeadline.findUniqueOrThrow({
      where: { domain_itemId: { domain: DOMAIN, itemId: busy.ws } },
    });
    expect(Math.abs(item.dueAt!.getTime() - (Date.now() + 5 * DAY))).toBeLessThan(120_000);
    await stack.idle();
    const deadlines = await stack.db.reclaimDeadline.findMany({
      where: { domain: DOMAIN, companyId: busy.project.companyId },
    });
    expect(deadlines.map((d) => d.dueAt.getTime())).toEqual([item.dueAt!.getTime()]);
  });

  it("an expired restore point reopens fresh on its branch with the warning, recorded on the activity", async () => {
    const gone = await dirtyWorkspace(stack, "task-expired", { closedDaysAgo: 4 });
    await wake(stack, gone.project.companyId, gone.issueId);
    await waitFor(async () => !existsSync(gone.wt), { what: "the worktree removed" });
    // Retention expired it (its object may already be gone).
    await stack.db.executionWorkspaceRestorePoint.updateMany({
      where: { executionWorkspaceId: gone.ws },
      data: { status: "expiring" },
    });
    const reopened = await stack.api(
      "POST",
      `/v1/companies/${gone.project.companyId}/execution-workspaces/${gone.ws}/reopen?wait=90`,
      { reason: "comment" },
    );
    expect(reopened.body).toEqual(
      expect.objectContaining({
        outcome: "fresh",
        path: gone.wt,
        warning: expect.stringContaining("no longer available"),
      }),
    );
    // On its branch, at the tip the shared clone still has; the untracked file is gone.
    expect((await git(gone.wt, ["symbolic-ref", "HEAD"])).trim()).toBe("refs/heads/task-expired");
    expect(existsSync(path.join(gone.wt, "notes.md"))).toBe(false);
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: gone.ws } });
    expect(row.status).toBe("active");
    expect((row.metadata as Record<string, unknown>).gitCacheRestoration).toBeUndefined();
    const [activity] = await stack.db.activityLog.findMany({
      where: { entityId: gone.ws, action: "execution_workspace.reopened" },
    });
    expect(activity!.details).toEqual(
      expect.objectContaining({ outcome: "fresh", warning: reopened.body.warning }),
    );
  });

  it("a restore that fails leaves the workspace closed and answers failed with a reason; nothing is lost", async () => {
    const t = await dirtyWorkspace(stack, "task-unreadable", { closedDaysAgo: 4 });
    await wake(stack, t.project.companyId, t.issueId);
    await waitFor(async () => !existsSync(t.wt), { what: "the worktree removed" });
    const point = await stack.db.executionWorkspaceRestorePoint.findFirstOrThrow({
      where: { executionWorkspaceId: t.ws, status: "active" },
    });
    // One byte of the stored object flipped (storage that went bad).
    const storage = storageFor(readPaperclipStorage(stack.env));
    const key = StorageKey.parse(point.storageKey);
    const original = await buffer(await storage.get(key));
    const damaged = Buffer.from(original);
    const middle = damaged.length >> 1;
    damaged[middle] = damaged[middle]! ^ 0xff;
    await storage.put(key, Readable.from([damaged]), damaged.length);

    const failed = await reopen(stack, t.project.companyId, t.ws);
    expect(failed).toEqual(expect.objectContaining({ outcome: "failed", reason: "restore_failed" }));
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
    expect(row.status).toBe("archived");
    // No checkout was left where the run would start, none half built beside it.
    expect(existsSync(t.wt)).toBe(false);
    expect((await readdir(path.dirname(t.wt))).filter((n) => n.startsWith(".restoring-"))).toEqual([]);
    expect(await git(t.project.clone, ["worktree", "list", "--porcelain"])).not.toContain(".restoring-");

    await storage.put(key, Readable.from([original]), original.length);
    expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
      expect.objectContaining({ outcome: "restored", path: t.wt }),
    );
    expect(await readFile(path.join(t.wt, "notes.md"), "utf8")).toBe("untracked\n");
  });

  it("reopens of several worktrees of one shared clone at once all restore (serialized per shared clone)", async () => {
    const first = await dirtyWorkspace(stack, "task-together-0", { closedDaysAgo: 4 });
    const all = [first];
    for (let i = 1; i < 6; i++) {
      all.push(
        await dirtyWorkspace(stack, `task-together-${i}`, { closedDaysAgo: 4 }, { project: first.project }),
      );
    }
    for (const t of all) await wake(stack, t.project.companyId, t.issueId);
    await waitFor(async () => all.every((t) => !existsSync(t.wt)), { what: "the worktrees removed" });
    await stack.idle();
    const answers = await Promise.all(all.map((t) => reopen(stack, t.project.companyId, t.ws)));
    expect(answers.map((a) => a.outcome)).toEqual(all.map(() => "restored"));
    for (const t of all) expect(await readFile(path.join(t.wt, "notes.md"), "utf8")).toBe("untracked\n");
    expect((await readdir(path.dirname(first.wt))).filter((n) => n.startsWith("."))).toEqual([]);
  });
});
