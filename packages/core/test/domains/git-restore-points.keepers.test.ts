/**
 * What keeps a closed issue tree's worktree (spec: "Any issue still bound to the workspace, and
 * any live run, finalization, lease, recovery action or runtime service of an issue in the tree
 * or of the workspace, still keeps it"; "Submodules, special git state ... still keep a
 * worktree from expiring"; the expiration locks), each with its own skip reason and its next
 * look (15 minutes for what goes away by itself, a change for the rest), through the worker.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { createLogger, lockIssueSource, lockWorkspaceLifecycle } from "@reclaim/core";
import { startStack, type Stack } from "@reclaim/testkit";
import {
  DOMAIN,
  dirtyWorkspace,
  git,
  gitEnv,
  insertIssue,
  wakeIssue,
  workspaceEntry,
} from "@reclaim/testkit/src/fixtures/git-workspaces";

type Dirty = Awaited<ReturnType<typeof dirtyWorkspace>>;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ env: gitEnv(true), log: createLogger("error") });
});
afterAll(async () => stack?.stop());

const FIFTEEN_MINUTES = 15 * 60_000;

/** The workspace's next look, relative to now (null: only a change wakes it). */
async function nextLook(ws: string): Promise<number | null> {
  const item = await stack.db.reclaimItemDeadline.findUniqueOrThrow({
    where: { domain_itemId: { domain: DOMAIN, itemId: ws } },
  });
  return item.dueAt === null ? null : item.dueAt.getTime() - Date.now();
}

async function keptFor(t: Dirty, reason: string): Promise<void> {
  await wakeIssue(stack, t.project.companyId, t.issueId);
  expect(await workspaceEntry(stack, t.project.companyId, t.ws, "skipped")).toEqual(
    expect.objectContaining({ reason }),
  );
  expect(existsSync(path.join(t.wt, "work.txt"))).toBe(true);
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
  expect(row.status).toBe("active");
}

const closed = (branch: string) => dirtyWorkspace(stack, branch, { closedDaysAgo: 5 });

describe("live or unresolved consumers keep it, looked at again in 15 minutes", () => {
  it.each<[string, (t: Dirty) => Promise<void>]>([
    [
      "live_run",
      async (t) => {
        await stack.db.heartbeatRun.create({
          data: { companyId: t.project.companyId, status: "queued", contextSnapshot: { issueId: t.issueId } },
        });
      },
    ],
    [
      "unsettled_finalization",
      async (t) => {
        await stack.db.nativeRunFinalization.create({
          data: {
            runId: randomUUID(),
            companyId: t.project.companyId,
            issueId: t.issueId,
            phase: "committing",
          },
        });
      },
    ],
    [
      "live_lease",
      async (t) => {
        await stack.db.environmentLease.create({
          data: { companyId: t.project.companyId, executionWorkspaceId: t.ws, status: "active" },
        });
      },
    ],
    [
      "live_service",
      async (t) => {
        await stack.db.workspaceRuntimeService.create({
          data: {
            id: randomUUID(),
            companyId: t.project.companyId,
            executionWorkspaceId: t.ws,
            status: "running",
          },
        });
      },
    ],
    [
      "open_recovery",
      async (t) => {
        await stack.db.issueRecoveryAction.create({
          data: { companyId: t.project.companyId, sourceIssueId: t.issueId, status: "active" },
        });
      },
    ],
    [
      "reopen_pending",
      async (t) => {
        await stack.db.executionWorkspace.update({
          where: { id: t.ws },
          data: {
            metadata: {
              reopenPendingConsumption: true,
              reopenPendingConsumptionSince: new Date().toISOString(),
            },
          },
        });
      },
    ],
  ])("%s", async (reason, add) => {
    const t = await closed(`task-${reason}`);
    await add(t);
    await keptFor(t, reason);
    expect(Math.abs((await nextLook(t.ws))! - FIFTEEN_MINUTES)).toBeLessThan(120_000);
  });
});

describe("an open issue bound to it keeps it until a change", () => {
  it("issue_bound", async () => {
    const t = await closed("task-bound");
    // An open issue outside the tree, bound to the workspace.
    const elsewhere = await insertIssue(stack.db, t.project.companyId, { closedDaysAgo: null });
    await stack.db.issue.update({ where: { id: elsewhere }, data: { executionWorkspaceId: t.ws } });
    await keptFor(t, "issue_bound");
    expect(await nextLook(t.ws)).toBeNull();
  });
});

describe("git keeps it", () => {
  it.each<[string, (t: Dirty) => Promise<void>]>([
    [
      "special_git_state",
      async (t) => {
        // A merge stopped before its commit (MERGE_HEAD in the worktree's git directory).
        await git(t.wt, ["checkout", "-q", "-b", "side"]);
        await writeFile(path.join(t.wt, "side.txt"), "side\n");
        await git(t.wt, ["add", "side.txt"]);
        await git(t.wt, ["commit", "-q", "-m", "side"]);
        await git(t.wt, ["checkout", "-q", "-"]);
        await git(t.wt, ["merge", "-q", "--no-ff", "--no-commit", "side"]);
      },
    ],
    [
      "submodule",
      async (t) => {
        const head = (await git(t.wt, ["rev-parse", "HEAD"])).trim();
        await git(t.wt, ["update-index", "--add", "--cacheinfo", `160000,${head},vendor/lib`]);
      },
    ],
    [
      "stash",
      async (t) => {
        await writeFile(path.join(t.wt, "README.md"), "stashed change\n");
        await git(t.wt, ["stash", "-q"]);
      },
    ],
  ])("%s (until a change)", async (reason, make) => {
    const t = await closed(`task-${reason}`);
    await make(t);
    await keptFor(t, reason);
    expect(await nextLook(t.ws)).toBeNull();
  });

  it.each([
    ["index.lock", "index"],
    ["HEAD.lock", "head"],
    ["branch ref lock (refs/heads/<branch>.lock)", "ref"],
  ])("git_lock_busy: git holds the checkout's %s; looked at again in 15 minutes", async (_name, which) => {
    const t = await closed(`task-${which}-lock`);
    const gitDir = (await git(t.wt, ["rev-parse", "--absolute-git-dir"])).trim();
    const common = path.resolve(t.wt, (await git(t.wt, ["rev-parse", "--git-common-dir"])).trim());
    const lock =
      which === "index"
        ? path.join(gitDir, "index.lock")
        : which === "head"
          ? path.join(gitDir, "HEAD.lock")
          : path.join(common, "refs", "heads", `task-${which}-lock.lock`);
    await writeFile(lock, "");
    await keptFor(t, "git_lock_busy");
    expect(Math.abs((await nextLook(t.ws))! - FIFTEEN_MINUTES)).toBeLessThan(120_000);
    // Git's own lock file is never touched.
    expect(existsSync(lock)).toBe(true);
  });
});

describe("the expiration locks and the checkout's place", () => {
  it.each(["workspace lifecycle lock", "issue's source lock"])(
    "lock_busy: Paperclip holds the %s; looked at again in 15 minutes",
    async (which) => {
      const t = await closed(`task-${which.split(" ")[0]!.replace(/\W/g, "")}-lock`);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let held!: () => void;
      const holding = new Promise<void>((resolve) => (held = resolve));
      const holder = stack.db.$transaction(
        async (tx) => {
          if (which.startsWith("workspace")) await lockWorkspaceLifecycle(tx, t.ws);
          else expect(await lockIssueSource(tx, t.project.companyId, t.issueId)).toBe(true);
          held();
          await released;
        },
        { timeout: 120_000 },
      );
      await holding;
      try {
        await keptFor(t, "lock_busy");
      } finally {
        release();
        await holder;
      }
      expect(Math.abs((await nextLook(t.ws))! - FIFTEEN_MINUTES)).toBeLessThan(120_000);
    },
  );

  it("unsafe_workspace_path: a checkout path through a symbolic link is never followed", async () => {
    const t = await closed("task-symlink");
    const link = path.join(stack.instanceRoot, "links", "task-symlink");
    await mkdir(path.dirname(link), { recursive: true });
    await symlink(t.wt, link);
    await stack.db.executionWorkspace.update({ where: { id: t.ws }, data: { cwd: link } });
    await keptFor(t, "unsafe_workspace_path");
  });

  it("worktree_missing and no_repository_url", async () => {
    const gone = await closed("task-gone");
    await stack.db.executionWorkspace.update({
      where: { id: gone.ws },
      data: { cwd: path.join(path.dirname(gone.wt), "never-there") },
    });
    await keptFor(gone, "worktree_missing");
    const nowhere = await closed("task-no-url");
    await stack.db.executionWorkspace.update({ where: { id: nowhere.ws }, data: { repoUrl: null } });
    await keptFor(nowhere, "no_repository_url");
  });
});

describe("the delays", () => {
  it("terminal_delay counts only the issues that use the workspace, from their latest close", async () => {
    const t = await dirtyWorkspace(stack, "task-delay", { closedDaysAgo: 5 });
    // A descendant that selects the workspace as its existing one closed a day ago: 2 days to go.
    const child = await insertIssue(stack.db, t.project.companyId, { parentId: t.issueId, closedDaysAgo: 1 });
    await stack.db.issue.update({
      where: { id: child },
      data: { executionWorkspaceSettings: { existingWorkspaceId: t.ws } },
    });
    // One that works elsewhere and closed just now does not count.
    await insertIssue(stack.db, t.project.companyId, { parentId: t.issueId, closedDaysAgo: 0 });
    await keptFor(t, "terminal_delay");
    expect(Math.abs((await nextLook(t.ws))! - 2 * 86_400_000)).toBeLessThan(120_000);
  });
});
