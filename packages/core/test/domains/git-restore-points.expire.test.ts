/**
 * Git cache expiration through the worker, on real repositories with a real bare remote on
 * disk, real PostgreSQL and Redis: strict mode, restore-point mode, the rollback when the
 * worktree changes under the locks, and the issues that count.
 */
import { existsSync } from "node:fs";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { createLogger } from "@reclaim/core";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  addWorktree,
  DOMAIN,
  git,
  gitEnv,
  insertGitWorkspace,
  insertIssue,
  insertProjectRepository,
  makeProject,
  wakeIssue as wake,
} from "@reclaim/testkit/src/fixtures/git-workspaces";
import { checkoutFacts } from "./git-restore-points.fixtures";

async function reportFor(stack: Stack, companyId: string, workspaceId: string) {
  const reports = await stack.waitForReports(DOMAIN, (rs) =>
    rs.some(
      (r) => r.companyId === companyId && (r.entries ?? []).some((e) => e.id === `workspace/${workspaceId}`),
    ),
  );
  return reports.find(
    (r) => r.companyId === companyId && (r.entries ?? []).some((e) => e.id === `workspace/${workspaceId}`),
  )!;
}

describe("strict expiration (restore points disabled)", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: gitEnv(false) });
  });
  afterAll(async () => stack?.stop());

  it("keeps a closed worktree with one unpushed commit and removes a pushed one", async () => {
    const project = await makeProject(stack.instanceRoot);
    const dirty = await addWorktree(project, "task-unpushed");
    await writeFile(path.join(dirty, "new.txt"), "work\n");
    await git(dirty, ["add", "new.txt"]);
    await git(dirty, ["commit", "-q", "-m", "unpushed"]);
    const clean = await addWorktree(project, "task-pushed");
    await writeFile(path.join(clean, "done.txt"), "done\n");
    await git(clean, ["add", "done.txt"]);
    await git(clean, ["commit", "-q", "-m", "pushed"]);
    await git(clean, ["push", "-q", "origin", "task-pushed"]);

    const a = await insertIssue(stack.db, project.companyId, { closedDaysAgo: 1 });
    const b = await insertIssue(stack.db, project.companyId, { closedDaysAgo: 1 });
    const wsA = await insertGitWorkspace(stack.db, {
      project,
      cwd: dirty,
      branch: "task-unpushed",
      sourceIssueId: a,
    });
    const wsB = await insertGitWorkspace(stack.db, {
      project,
      cwd: clean,
      branch: "task-pushed",
      sourceIssueId: b,
    });
    await wake(stack, project.companyId, a);
    await wake(stack, project.companyId, b);

    const reportA = await reportFor(stack, project.companyId, wsA);
    expect(reportA.entries).toContainEqual(
      expect.objectContaining({ id: `workspace/${wsA}`, outcome: "skipped", reason: "unpushed_work" }),
    );
    await waitFor(async () => !existsSync(clean), { what: "the pushed worktree removed" });
    expect(existsSync(path.join(dirty, "new.txt"))).toBe(true);
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: wsB } });
    expect(row.status).toBe("archived");
    expect((row.metadata as Record<string, Record<string, unknown>>).gitCacheRestoration).toEqual(
      expect.objectContaining({ recipe: "paperclip.git-cache-restoration.v2", mode: "strict" }),
    );
    await waitFor(
      async () => {
        const r = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: wsB } });
        return (r.metadata as Record<string, unknown>).gitCacheExpirationRemoval === null;
      },
      { what: "the removal plan cleared" },
    );
    // The worktree's registration is gone from the shared clone; its branch stays.
    expect(await git(project.clone, ["worktree", "list", "--porcelain"])).not.toContain("task-pushed");
    expect((await git(project.clone, ["branch", "--list", "task-pushed"])).trim()).not.toBe("");
    expect(
      await stack.db.executionWorkspaceRestorePoint.count({ where: { executionWorkspaceId: wsB } }),
    ).toBe(0);
  });
});

/** A worktree with every kind of work its remote cannot reproduce, and a nested checkout with an unpushed commit. */
async function busyWorkspace(stack: Stack, closedDaysAgo: number | null) {
  const project = await makeProject(stack.instanceRoot);
  const wt = await addWorktree(project, "task-rp");
  await writeFile(path.join(wt, ".gitignore"), "*.log\nbuild/\n");
  await git(wt, ["add", ".gitignore"]);
  await git(wt, ["commit", "-q", "-m", "unpushed"]);
  await writeFile(path.join(wt, "lost.txt"), "only in the reflog\n");
  await git(wt, ["add", "lost.txt"]);
  await git(wt, ["commit", "-q", "-m", "reset away"]);
  await git(wt, ["reset", "-q", "--hard", "HEAD~1"]);
  await writeFile(path.join(wt, "README.md"), "staged change\n");
  await git(wt, ["add", "README.md"]);
  await writeFile(path.join(wt, "src/app.ts"), "export const unstaged = 1;\n");
  await writeFile(path.join(wt, "run.sh"), "#!/bin/sh\necho hi\n", { mode: 0o755 });
  await symlink("README.md", path.join(wt, "link-to-readme"));
  await mkdir(path.join(wt, "build"), { recursive: true });
  await writeFile(path.join(wt, "build", "out.log"), "ignored build output\n");
  await writeFile(path.join(wt, ".env"), "SECRET=1\n");
  // A nested checkout of another project repository, with an unpushed commit.
  const lib = await makeProject(
    stack.instanceRoot,
    { "lib.ts": "export {};\n" },
    { companyId: project.companyId },
  );
  const nested = path.join(wt, ".paperclip-repositories", "lib-1");
  await git(wt, ["clone", "-q", lib.remote, nested]);
  await writeFile(path.join(nested, "lib.ts"), "export const x = 1;\n");
  await git(nested, ["commit", "-q", "-am", "nested unpushed"]);
  await insertProjectRepository(stack.db, project, project.remote);
  await insertProjectRepository(stack.db, project, lib.remote);
  const issue = await insertIssue(stack.db, project.companyId, { closedDaysAgo });
  const ws = await insertGitWorkspace(stack.db, {
    project,
    cwd: wt,
    branch: "task-rp",
    sourceIssueId: issue,
  });
  return { project, wt, nested, issue, ws };
}

describe("restore-point mode", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: gitEnv(true), log: createLogger("error") });
  });
  afterAll(async () => stack?.stop());

  it("waits for the terminal delay, then removes the worktree; a reopen brings back every byte", async () => {
    const recent = await busyWorkspace(stack, 1);
    await wake(stack, recent.project.companyId, recent.issue);
    const waiting = await reportFor(stack, recent.project.companyId, recent.ws);
    expect(waiting.entries).toContainEqual(
      expect.objectContaining({ id: `workspace/${recent.ws}`, reason: "terminal_delay" }),
    );
    const item = await stack.db.reclaimItemDeadline.findUniqueOrThrow({
      where: { domain_itemId: { domain: DOMAIN, itemId: recent.ws } },
    });
    expect(Math.abs(item.dueAt!.getTime() - (Date.now() + 2 * 86_400_000))).toBeLessThan(120_000);
    expect(existsSync(recent.wt)).toBe(true);

    const { project, wt, nested, issue, ws } = await busyWorkspace(stack, 4);
    const before = await checkoutFacts(wt);
    const nestedBefore = await checkoutFacts(nested);
    await wake(stack, project.companyId, issue);
    await waitFor(async () => !existsSync(wt), { what: "the worktree removed" });
    const points = await stack.db.executionWorkspaceRestorePoint.findMany({
      where: { executionWorkspaceId: ws },
    });
    expect(points.map((p) => [p.kind, p.checkoutName, p.status]).sort()).toEqual([
      ["nested_checkout", "lib-1", "active"],
      ["worktree", null, "active"],
    ]);
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
    expect(row.status).toBe("archived");
    const recipe = (row.metadata as Record<string, Record<string, unknown>>).gitCacheRestoration;
    expect(recipe).toEqual(
      expect.objectContaining({
        recipe: "paperclip.git-cache-restoration.v2",
        mode: "restore_point",
        trigger: "terminal",
      }),
    );
    expect(recipe!.contents).toEqual([
      expect.objectContaining({ checkoutName: "lib-1", restorePointId: expect.any(String) }),
    ]);

    const reopened = await stack.api(
      "POST",
      `/v1/companies/${project.companyId}/execution-workspaces/${ws}/reopen?wait=90`,
      { reason: "run" },
    );
    expect(reopened.status).toBe(200);
    expect(reopened.body).toEqual(
      expect.objectContaining({ outcome: "restored", path: wt, restorePointId: expect.any(String) }),
    );
    expect(await checkoutFacts(wt)).toEqual(before);
    expect(await checkoutFacts(nested)).toEqual(nestedBefore);
    const after = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
    expect(after.status).toBe("active");
    expect((after.metadata as Record<string, unknown>).gitCacheRestoration).toBeUndefined();
    // Superseded in the reopen's transaction; restore-point retention then deletes the objects.
    for (const p of await stack.db.executionWorkspaceRestorePoint.findMany({
      where: { executionWorkspaceId: ws },
    })) {
      expect(["superseded", "deleted"]).toContain(p.status);
    }
    const activity = await stack.db.activityLog.findMany({
      where: { entityId: ws, action: "execution_workspace.reopened" },
    });
    expect(activity).toHaveLength(1);
  });
});
