/**
 * Isolated task directories, the rules of the spec not proven elsewhere, through the real
 * worker on real directories, PostgreSQL and Redis: which rows are task directory rows
 * (`project_primary`, `local_fs`, `isolated_workspace` or `shared_workspace`, cwd exactly the
 * issue's directory) and that no other row is touched; another open workspace pointing into
 * the directory keeps it, closed rows of the same issue do not; a company folder that is a
 * link; the restore point's retention counted from the later of the close and the removal;
 * the orphan rules (a project workspace, a lease of an issue of the tree or of a workspace row
 * of the directory keep it; an archived row its issue is not bound to makes it an orphan,
 * removed without a restore point).
 */
import { readdir, readFile, rename, symlink } from "node:fs/promises";
import path from "node:path";
import { startStack, tempDir, waitFor, type Stack } from "@reclaim/testkit";
import {
  closeEvent,
  exists,
  issueDirectory,
  otherRow,
  removed,
  reopen,
  snapshotOf,
  task,
  TASK_ENV,
  workspaceRow,
  type Task,
} from "@reclaim/testkit/src/fixtures/task-directories";

const DOMAIN = "task-directories";
const DAY = 86_400_000;
const entryOf = (t: { company: string; issue: string }) => `isolated-workspaces/${t.company}/${t.issue}`;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ env: TASK_ENV });
});
afterAll(async () => stack?.stop());

/** The entries of `t`'s directory once one says `reason`. */
async function keptWith(t: { company: string; issue: string }, reason: string) {
  const reports = await stack.waitForReports(DOMAIN, (rs) =>
    rs.some((r) => (r.entries ?? []).some((e) => e.id === entryOf(t) && e.reason === reason)),
  );
  return reports.flatMap((r) => r.entries ?? []).filter((e) => e.id === entryOf(t));
}

const restorePoints = (t: Task) =>
  stack.db.executionWorkspaceRestorePoint.count({ where: { executionWorkspaceId: t.workspace } });

describe("task directory rows", () => {
  it("a shared_workspace row is saved and removed like an isolated_workspace one", async () => {
    const t = await task(stack);
    await stack.db.executionWorkspace.update({
      where: { id: t.workspace },
      data: { mode: "shared_workspace" },
    });
    await closeEvent(stack, t);
    await removed(stack, t);
    expect(await restorePoints(t)).toBe(1);
  });

  it.each([
    ["a git_worktree strategy", { strategyType: "git_worktree" }],
    ["an adapter_managed provider", { providerType: "adapter_managed" }],
    ["another mode", { mode: "operator_branch" }],
  ])(
    "a row with %s at the same path is no task directory row: nothing is saved or removed",
    async (_what, data) => {
      const t = await task(stack);
      const before = await snapshotOf(t.dir);
      await stack.db.executionWorkspace.update({ where: { id: t.workspace }, data });
      await closeEvent(stack, t);
      await stack.waitForReports(DOMAIN, (rs) => rs.some((r) => r.companyId === t.company));
      await stack.idle();
      expect(await snapshotOf(t.dir)).toEqual(before);
      expect((await workspaceRow(stack, t)).status).toBe("active");
      expect(await restorePoints(t)).toBe(0);
      // Its item is forgotten: nothing is scheduled for it.
      expect(await stack.db.reclaimItemDeadline.count({ where: { itemId: `ws:${t.workspace}` } })).toBe(0);
    },
  );

  it("another open workspace row pointing into the directory keeps it (task_directory_in_use); a closed row of the same issue does not", async () => {
    const inUse = await task(stack);
    await otherRow(stack, inUse, {
      status: "active",
      strategyType: "git_worktree",
      cwd: path.join(inUse.dir, "reports"),
    });
    const closedToo = await task(stack);
    await otherRow(stack, closedToo, { status: "archived", closedDaysAgo: 20, cwd: closedToo.dir });
    await closeEvent(stack, inUse);
    await closeEvent(stack, closedToo);
    expect((await keptWith(inUse, "task_directory_in_use")).length).toBeGreaterThan(0);
    expect(await exists(path.join(inUse.dir, "run.sh"))).toBe(true);
    await removed(stack, closedToo);
  });

  it("a company folder that is a link to a directory outside keeps the directory (unsafe_task_directory), and nothing outside changes", async () => {
    const outside = await tempDir("reclaim-outside-");
    try {
      const t = await task(stack);
      const companyDir = path.dirname(t.dir);
      await rename(companyDir, path.join(outside.path, t.company));
      await symlink(path.join(outside.path, t.company), companyDir);
      const before = await snapshotOf(path.join(outside.path, t.company, t.issue));
      await closeEvent(stack, t);
      await keptWith(t, "unsafe_task_directory");
      await stack.idle();
      expect(await snapshotOf(path.join(outside.path, t.company, t.issue))).toEqual(before);
      expect(await readdir(path.join(outside.path, t.company))).toEqual([t.issue]);
      expect(await restorePoints(t)).toBe(0);
    } finally {
      await outside.remove();
    }
  });
});

describe("the restore point's retention", () => {
  it("counts from the later of the tree's close and the removal: a task closed long ago keeps its files for the full period", async () => {
    const t = await task(stack, { closedDaysAgo: 100 });
    await closeEvent(stack, t);
    await removed(stack, t);
    const rp = await waitFor(
      async () => {
        const row = await stack.db.executionWorkspaceRestorePoint.findFirstOrThrow({
          where: { executionWorkspaceId: t.workspace },
        });
        // Activation makes it due for review at once (delete_after = activated_at); the review
        // sets its expiry, or expires it.
        const reviewed = row.status !== "active" || row.deleteAfter! > row.activatedAt!;
        return reviewed ? row : null;
      },
      { what: "the restore point reviewed" },
    );
    expect(rp.status).toBe("active");
    expect(rp.deleteAfter!.getTime()).toBe(rp.activatedAt!.getTime() + 90 * DAY);
    expect((await reopen(stack, t)).body.outcome).toBe("restored");
    expect(await readFile(path.join(t.dir, "reports", "summary.md"), "utf8")).toBe("# the only copy\n");
  });
});

describe("orphans", () => {
  const walk = async (...dirs: { company: string; issue: string }[]) =>
    stack.api("POST", "/v1/events", {
      events: dirs.map((d) => ({
        type: "issue.changed",
        companyId: d.company,
        issueId: d.issue,
        status: "done",
      })),
    });

  it("a project workspace pointing into an orphan keeps it (task_directory_in_use)", async () => {
    const o = await issueDirectory(stack);
    await stack.db.projectWorkspace.create({ data: { companyId: o.company, cwd: o.dir } });
    await walk(o);
    await keptWith(o, "task_directory_in_use");
    expect(await exists(path.join(o.dir, "notes.txt"))).toBe(true);
  });

  it("a live lease of an issue of the tree, or of a workspace row of the directory, keeps it (live_or_unresolved_consumer)", async () => {
    const parent = await issueDirectory(stack);
    const child = await issueDirectory(stack, { companyId: parent.company, parentId: parent.issue });
    await stack.db.environmentLease.create({
      data: { companyId: parent.company, issueId: child.issue, status: "active" },
    });
    const rowLeased = await issueDirectory(stack);
    const row = await otherRow(stack, rowLeased, {
      status: "archived",
      closedDaysAgo: 20,
      cwd: rowLeased.dir,
    });
    await stack.db.environmentLease.create({
      data: { companyId: rowLeased.company, executionWorkspaceId: row.id, status: "active" },
    });
    await walk(parent, rowLeased);
    await keptWith(parent, "live_or_unresolved_consumer");
    await keptWith(rowLeased, "live_or_unresolved_consumer");
    expect(await exists(path.join(parent.dir, "notes.txt"))).toBe(true);
    expect(await exists(path.join(rowLeased.dir, "notes.txt"))).toBe(true);
  });

  it("an archived row its issue is not bound to makes the directory an orphan: removed without a restore point", async () => {
    const o = await issueDirectory(stack);
    const row = await otherRow(stack, o, { status: "cleanup_failed", closedDaysAgo: 20, cwd: o.dir });
    await stack.api("POST", "/v1/events", {
      events: [
        { type: "workspace.changed", companyId: o.company, workspaceId: row.id, status: "cleanup_failed" },
      ],
    });
    await waitFor(async () => !(await exists(o.dir)), { what: "the orphan removed" });
    expect(
      await stack.db.executionWorkspaceRestorePoint.count({ where: { executionWorkspaceId: row.id } }),
    ).toBe(0);
    expect((await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: row.id } })).status).toBe(
      "cleanup_failed",
    );
    expect(
      await stack.db.reclaimItemDeadline.count({ where: { itemId: `dir:${o.issue}`, dueAt: { not: null } } }),
    ).toBe(0);
  });
});
