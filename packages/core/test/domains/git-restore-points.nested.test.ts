/**
 * Nested `.paperclip-repositories` checkouts through the worker (spec: "Git workspace restore
 * points", "Nested project repository worktrees"): each gets its own restore point under its
 * checkout name, recorded in the recipe; a worktree of the shared clone loses only its own
 * `paperclip/<id>/` branch and registration; a reopen brings every byte back, and the workspace
 * expires again after it (a restored nested clone's imported history is accepted through
 * `restoredFrom`); the blocking rules keep the workspace, each with its reason; a nested
 * clone's remote-tracking refs moving after the capture roll expiration back.
 */
import { existsSync } from "node:fs";
import { mkdir, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { createLogger, FaultPoints } from "@reclaim/core";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  addWorktree,
  git,
  gitEnv,
  insertGitWorkspace,
  insertIssue,
  insertProjectRepository,
  makeProject,
  wakeIssue,
  workspaceEntry,
  type Project,
} from "@reclaim/testkit/src/fixtures/git-workspaces";
import {
  addNestedClone,
  addNestedWorktree,
  checkoutFacts,
  consumeReopen,
  remoteDroppedHistory,
  reopen,
} from "./git-restore-points.fixtures";

let onSaved: (() => Promise<void>) | null = null;

/** A closed task's worktree (clean, or with an untracked file) with its workspace row. */
async function task(stack: Stack, branch: string, options: { clean?: boolean } = {}) {
  const project = await makeProject(stack.instanceRoot);
  const wt = await addWorktree(project, branch);
  if (!options.clean) await writeFile(path.join(wt, "notes.md"), "untracked\n");
  await insertProjectRepository(stack.db, project, project.remote);
  const issue = await insertIssue(stack.db, project.companyId, { closedDaysAgo: 4 });
  const ws = await insertGitWorkspace(stack.db, { project, cwd: wt, branch, sourceIssueId: issue });
  return { project, wt, issue, ws };
}

/** Another repository of the task's project (a nested checkout may come from it). */
async function repository(stack: Stack, owner: Project): Promise<Project> {
  const repo = await makeProject(
    stack.instanceRoot,
    { "lib.ts": "export {};\n" },
    { companyId: owner.companyId },
  );
  await insertProjectRepository(stack.db, owner, repo.remote);
  return repo;
}

async function expired(stack: Stack, t: { project: Project; wt: string; issue: string; ws: string }) {
  await wakeIssue(stack, t.project.companyId, t.issue);
  await waitFor(async () => !existsSync(t.wt), { what: `${t.wt} removed`, timeoutMs: 60_000 });
  await waitFor(
    async () => {
      const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
      return (row.metadata as Record<string, unknown>).gitCacheExpirationRemoval === null;
    },
    { what: "the removal finished" },
  );
}

describe("restore-point mode", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      env: gitEnv(true),
      log: createLogger("error"),
      faults: FaultPoints.of({ "git-restore-points.saved": async () => onSaved?.() }),
    });
  });
  afterAll(async () => stack?.stop());

  it("nested checkouts get their own restore points; a worktree of the shared clone loses only its own branch; reopen, expire again, reopen again bring back every byte", async () => {
    const t = await task(stack, "task-nested");
    const lib = await repository(stack, t.project);
    const nestedWt = await addNestedWorktree(lib, t.wt, "lib-1", "n1");
    await writeFile(path.join(nestedWt, "lib.ts"), "export const n = 1;\n");
    await git(nestedWt, ["commit", "-q", "-am", "nested unpushed"]);
    await writeFile(path.join(nestedWt, "draft.txt"), "untracked in the nested worktree\n");
    // Another task's worktree of the same shared clone, with its own unpushed branch.
    const other = await addNestedWorktree(lib, path.join(stack.instanceRoot, "other-task"), "lib-2", "n2");
    await git(other, ["commit", "-q", "--allow-empty", "-m", "another task's work"]);
    const otherTip = (await git(other, ["rev-parse", "HEAD"])).trim();
    // A standalone nested clone with commits only its remote-tracking refs held, and a staged file.
    const tools = await repository(stack, t.project);
    const nestedClone = await addNestedClone(tools, t.wt, "tools-1");
    await remoteDroppedHistory(tools, nestedClone);
    await writeFile(path.join(nestedClone, "staged.txt"), "staged\n");
    await git(nestedClone, ["add", "staged.txt"]);
    const before = [
      await checkoutFacts(t.wt),
      await checkoutFacts(nestedWt),
      await checkoutFacts(nestedClone),
    ];

    await expired(stack, t);
    const points = await stack.db.executionWorkspaceRestorePoint.findMany({
      where: { executionWorkspaceId: t.ws, status: "active" },
    });
    expect(points.map((p) => [p.kind, p.checkoutName]).sort()).toEqual([
      ["nested_checkout", "lib-1"],
      ["nested_checkout", "tools-1"],
      ["worktree", null],
    ]);
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
    const recipe = (row.metadata as { gitCacheRestoration: { contents: { checkoutName: string }[] } })
      .gitCacheRestoration;
    expect(recipe.contents.map((c) => c.checkoutName)).toEqual(["lib-1", "tools-1"]);
    // The nested worktree's registration and its own branch are gone from the shared clone;
    // the other task's worktree and branch are untouched.
    const worktrees = await git(lib.clone, ["worktree", "list", "--porcelain"]);
    expect(worktrees).not.toContain("lib-1");
    expect(worktrees).toContain(other);
    expect(await git(lib.clone, ["for-each-ref", "--format=%(refname)", "refs/heads/paperclip/n1"])).toBe("");
    expect((await git(lib.clone, ["rev-parse", "refs/heads/paperclip/n2/main"])).trim()).toBe(otherTip);
    const config = await git(lib.clone, ["config", "--list", "--local"]);
    expect(config).not.toContain("branch.paperclip/n1/main.");
    expect(config).toContain("branch.paperclip/n2/main.merge=refs/heads/main");

    const first = await reopen(stack, t.project.companyId, t.ws);
    expect(first).toEqual(expect.objectContaining({ outcome: "restored", path: t.wt }));
    // The upstream comes back from the recipe (the branch's configuration went with it).
    expect((await git(nestedWt, ["rev-parse", "--abbrev-ref", "@{upstream}"])).trim()).toBe("origin/main");
    expect([
      await checkoutFacts(t.wt),
      await checkoutFacts(nestedWt),
      await checkoutFacts(nestedClone),
    ]).toEqual(before);

    // The run consumed the reopen; the tree is still closed: it expires again.
    await consumeReopen(stack, t.ws);
    await expired(stack, t);
    const second = await stack.db.executionWorkspaceRestorePoint.findMany({
      where: { executionWorkspaceId: t.ws, status: "active" },
    });
    expect(second.map((p) => p.checkoutName ?? "").sort()).toEqual(["", "lib-1", "tools-1"]);
    expect(second.every((p) => p.generation === 2)).toBe(true);
    expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
      expect.objectContaining({ outcome: "restored", path: t.wt }),
    );
    expect([
      await checkoutFacts(t.wt),
      await checkoutFacts(nestedWt),
      await checkoutFacts(nestedClone),
    ]).toEqual(before);
  });

  it("with the shared clones gone, the reopen clones them again and restores the worktree and its nested worktree", async () => {
    const t = await task(stack, "task-reclone");
    await writeFile(path.join(t.wt, "work.txt"), "unpushed\n");
    await git(t.wt, ["add", "work.txt"]);
    await git(t.wt, ["commit", "-q", "-m", "unpushed"]);
    const lib = await repository(stack, t.project);
    const nestedWt = await addNestedWorktree(lib, t.wt, "lib-1", "r1");
    await git(nestedWt, ["commit", "-q", "--allow-empty", "-m", "nested unpushed"]);
    const before = [await checkoutFacts(t.wt), await checkoutFacts(nestedWt)];
    await expired(stack, t);
    await rm(t.project.clone, { recursive: true, force: true });
    await rm(lib.clone, { recursive: true, force: true });
    expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
      expect.objectContaining({ outcome: "restored", path: t.wt }),
    );
    expect([await checkoutFacts(t.wt), await checkoutFacts(nestedWt)]).toEqual(before);
    expect(existsSync(path.join(t.project.clone, ".git"))).toBe(true);
    expect((await git(nestedWt, ["rev-parse", "--abbrev-ref", "@{upstream}"])).trim()).toBe("origin/main");
  });

  it("the blocking rules of nested checkouts keep the workspace, each with its reason", async () => {
    const cases: [string, (checkout: string) => Promise<void>][] = [
      [
        "other_branch_unpushed",
        async (c) => {
          await git(c, ["checkout", "-q", "-b", "ahead"]);
          await git(c, ["commit", "-q", "--allow-empty", "-m", "only here"]);
          await git(c, ["checkout", "-q", "main"]);
        },
      ],
      [
        "unique_branch_reflog_commits",
        async (c) => {
          await git(c, ["checkout", "-q", "-b", "side", "origin/main"]);
          await git(c, ["commit", "-q", "--allow-empty", "-m", "then reset away"]);
          await git(c, ["reset", "-q", "--hard", "origin/main"]);
          await git(c, ["checkout", "-q", "main"]);
          await git(c, ["reflog", "expire", "--expire=all", "HEAD"]);
          await git(c, ["update-ref", "-d", "ORIG_HEAD"]);
        },
      ],
      [
        "unreachable_objects",
        async (c) => {
          await writeFile(path.join(c, "b.txt"), "first\n");
          await git(c, ["add", "b.txt"]);
          await writeFile(path.join(c, "b.txt"), "second\n");
          await git(c, ["add", "b.txt"]);
        },
      ],
      [
        "commit_message_draft",
        async (c) => writeFile(path.join(c, ".git", "COMMIT_EDITMSG"), "a draft no commit has\n"),
      ],
      [
        "nested_checkout_ignored_files",
        async (c) => {
          await writeFile(path.join(c, ".gitignore"), "*.log\n");
          await writeFile(path.join(c, "debug.log"), "kept out of git\n");
        },
      ],
    ];
    for (const [reason, make] of cases) {
      const t = await task(stack, `task-${reason}`);
      const nested = await addNestedClone(await repository(stack, t.project), t.wt, "lib-1");
      await make(nested);
      await wakeIssue(stack, t.project.companyId, t.issue);
      expect(await workspaceEntry(stack, t.project.companyId, t.ws, "skipped")).toEqual(
        expect.objectContaining({ reason }),
      );
      expect(existsSync(nested)).toBe(true);
    }
    // A link among the nested checkouts is never followed: the workspace is kept.
    const linked = await task(stack, "task-nested-link");
    await mkdir(path.join(linked.wt, ".paperclip-repositories"), { recursive: true });
    await symlink(linked.project.clone, path.join(linked.wt, ".paperclip-repositories", "lib-1"));
    await wakeIssue(stack, linked.project.companyId, linked.issue);
    expect(await workspaceEntry(stack, linked.project.companyId, linked.ws, "skipped")).toEqual(
      expect.objectContaining({ reason: "unknown_nested_checkout" }),
    );
    // A nested checkout from a repository that is not one of the project's is never judged.
    const stranger = await task(stack, "task-stranger");
    const foreign = await makeProject(stack.instanceRoot);
    await addNestedClone(foreign, stranger.wt, "foreign-1");
    await wakeIssue(stack, stranger.project.companyId, stranger.issue);
    expect(await workspaceEntry(stack, stranger.project.companyId, stranger.ws, "skipped")).toEqual(
      expect.objectContaining({ reason: "unknown_nested_checkout" }),
    );
    // A COMMIT_EDITMSG that matches a commit of the checkout's history is accepted.
    const accepted = await task(stack, "task-editmsg");
    const nested = await addNestedClone(await repository(stack, accepted.project), accepted.wt, "lib-1");
    await writeFile(path.join(nested, "lib.ts"), "export const y = 1;\n");
    await git(nested, ["commit", "-q", "-am", "the message of a real commit"]);
    await writeFile(path.join(nested, ".git", "COMMIT_EDITMSG"), "the message of a real commit\n");
    await expired(stack, accepted);
  });

  it("a nested clone's remote-tracking ref moving after the capture rolls expiration back", async () => {
    const t = await task(stack, "task-tracking");
    const lib = await repository(stack, t.project);
    const nested = await addNestedClone(lib, t.wt, "lib-1");
    await remoteDroppedHistory(lib, nested);
    await git(nested, ["commit", "-q", "--allow-empty", "-m", "unpushed"]);
    onSaved = async () => {
      await git(nested, ["update-ref", "-m", "moved", "refs/remotes/origin/main", "HEAD"]);
    };
    try {
      await wakeIssue(stack, t.project.companyId, t.issue);
      expect(await workspaceEntry(stack, t.project.companyId, t.ws, "rolled_back")).toEqual(
        expect.objectContaining({ reason: "worktree_changed" }),
      );
    } finally {
      onSaved = null;
    }
    expect(existsSync(nested)).toBe(true);
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
    expect(row.status).toBe("active");
    expect(
      await stack.db.executionWorkspaceRestorePoint.count({
        where: { executionWorkspaceId: t.ws, status: "active" },
      }),
    ).toBe(0);
  });
});

describe("strict mode", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: gitEnv(false), log: createLogger("error") });
  });
  afterAll(async () => stack?.stop());

  it("keeps a nested worktree with an unpushed commit, and a nested clone whose remote-tracking refs hold commits the remote dropped", async () => {
    const a = await task(stack, "task-strict-wt", { clean: true });
    const nestedWt = await addNestedWorktree(await repository(stack, a.project), a.wt, "lib-1", "s1");
    await git(nestedWt, ["commit", "-q", "--allow-empty", "-m", "unpushed"]);
    const b = await task(stack, "task-strict-clone", { clean: true });
    const lib = await repository(stack, b.project);
    await remoteDroppedHistory(lib, await addNestedClone(lib, b.wt, "lib-1"));
    for (const t of [a, b]) {
      await wakeIssue(stack, t.project.companyId, t.issue);
      expect(await workspaceEntry(stack, t.project.companyId, t.ws, "skipped")).toEqual(
        expect.objectContaining({ reason: "nested_checkout_unpushed" }),
      );
      expect(existsSync(t.wt)).toBe(true);
    }
  });
});
