/**
 * Isolated task directories through the real worker, on real directories, PostgreSQL, Redis
 * and local_disk storage: a closed task's directory is saved in a sealed restore point and
 * removed, and a reopen brings back every byte, mode and link target; a file touched between
 * capture and deletion keeps the directory (`task_directory_changed`); the skip reasons, a
 * stored object that does not read back or cannot be decoded among them.
 */
import { open, readdir, utimes } from "node:fs/promises";
import path from "node:path";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  actionsAt,
  closeEvent as close,
  exists,
  removed,
  snapshotOf,
  task as makeTask,
  TASK_ENV as ENV,
  workspaceRow as rowOf,
  type Task,
} from "@reclaim/testkit/src/fixtures/task-directories";

let stack: Stack;
/** What a test does at a fault point (once): touch the directory, damage the stored object. */
const { at, faults } = actionsAt([
  "task-directories.before-recheck",
  "task-directories.sealed",
  "task-directories.read-back",
  "task-directories.staged",
]);
beforeAll(async () => {
  stack = await startStack({ env: ENV, faults });
});
afterAll(async () => stack?.stop());

const task = () => makeTask(stack);
const closeEvent = (t: Task) => close(stack, t);
const workspaceRow = (t: Task) => rowOf(stack, t);

describe("a closed task's directory", () => {
  it("is saved, removed, and restored by a reopen with every byte, mode and link target (local_disk)", async () => {
    const t = await task();
    const before = await snapshotOf(t.dir);
    delete before["node_modules"];
    delete before["node_modules/left-out"];
    delete before["node_modules/left-out/index.js"];
    await closeEvent(t);
    const removedState = async () =>
      ((await workspaceRow(t)).metadata as { isolatedTaskDirectoryRetention?: { state: string } } | null)
        ?.isolatedTaskDirectoryRetention?.state;
    await waitFor(async () => !(await exists(t.dir)) && (await removedState()) === "removed", {
      what: "the directory removed",
      timeoutMs: 30_000,
    });
    const row = await workspaceRow(t);
    const state = (row.metadata as { isolatedTaskDirectoryRetention: Record<string, string> })
      .isolatedTaskDirectoryRetention;
    expect(state).toMatchObject({ state: "removed", path: t.dir });
    expect(state.expiredName!.length).toBeLessThanOrEqual(t.issue.length);
    const rp = await stack.db.executionWorkspaceRestorePoint.findUniqueOrThrow({
      where: { id: state.restorePointId },
    });
    expect([rp.status, rp.kind]).toEqual(["active", "task_directory"]);
    expect(rp.storageKey).toContain(`git-restore-points/${t.workspace}/`);
    expect(rp.storageKey).toContain("/task-directory/");
    const actions = (await stack.db.activityLog.findMany({ where: { entityId: t.workspace } })).map(
      (a) => a.action,
    );
    expect(actions).toEqual(
      expect.arrayContaining([
        "execution_workspace.task_directory_archived",
        "execution_workspace.task_directory_removed",
      ]),
    );
    // Nothing outside the instance was read or followed: the link is saved as a link.
    const reopened = await stack.api(
      "POST",
      `/v1/companies/${t.company}/execution-workspaces/${t.workspace}/reopen?wait=60`,
      { reason: "run" },
    );
    expect(reopened.body).toMatchObject({ outcome: "restored", path: t.dir, restorePointId: rp.id });
    expect(await snapshotOf(t.dir)).toEqual(before);
    expect((await workspaceRow(t)).status).toBe("active");
    const after = await stack.db.executionWorkspaceRestorePoint.findUniqueOrThrow({ where: { id: rp.id } });
    expect(["superseded", "deleted"]).toContain(after.status);
    const again = await stack.api(
      "POST",
      `/v1/companies/${t.company}/execution-workspaces/${t.workspace}/reopen?wait=60`,
      { reason: "comment" },
    );
    expect(again.body.outcome).toBe("already_applied");
  });

  it("is restored through a .restoring-* directory beside it, its name no longer than the directory's, none left after", async () => {
    const t = await task();
    await closeEvent(t);
    await removed(stack, t);
    let staged: string[] = [];
    at["task-directories.staged"] = async () => {
      staged = (await readdir(path.dirname(t.dir))).filter((n) => n.startsWith(".restoring-"));
    };
    const answer = await stack.api(
      "POST",
      `/v1/companies/${t.company}/execution-workspaces/${t.workspace}/reopen?wait=60`,
      { reason: "run" },
    );
    expect(answer.body.outcome).toBe("restored");
    expect(staged).toHaveLength(1);
    expect(staged[0]!.length).toBeLessThanOrEqual(path.basename(t.dir).length);
    expect((await readdir(path.dirname(t.dir))).filter((n) => n.startsWith("."))).toEqual([]);
  });

  it("is kept when a file is touched between the capture and the deletion (task_directory_changed)", async () => {
    const t = await task();
    at["task-directories.before-recheck"] = async () => {
      const now = new Date();
      await utimes(path.join(t.dir, "run.sh"), now, now);
    };
    await closeEvent(t);
    const reports = await stack.waitForReports("task-directories", (rs) =>
      rs.some((r) => r.skipped["task_directory_changed"]),
    );
    expect(reports.length).toBeGreaterThan(0);
    expect(await exists(path.join(t.dir, "reports", "summary.md"))).toBe(true);
    const row = await workspaceRow(t);
    expect(row.status).toBe("active");
    const rps = await stack.db.executionWorkspaceRestorePoint.findMany({
      where: { executionWorkspaceId: t.workspace },
    });
    // Dropped: deleted by restore-point retention, perhaps already.
    expect(rps).toHaveLength(1);
    expect(["delete_requested", "deleted"]).toContain(rps[0]!.status);
  });

  it.each([
    [
      "issue_not_bound",
      async (t: Task) =>
        stack.db.issue.update({ where: { id: t.issue }, data: { executionWorkspaceId: null } }),
    ],
    [
      "live_or_unresolved_consumer",
      async (t: Task) =>
        stack.db.heartbeatRun.create({
          data: { companyId: t.company, status: "running", contextSnapshot: { issueId: t.issue } },
        }),
    ],
    [
      "task_directory_in_use",
      async (t: Task) =>
        stack.db.projectWorkspace.create({
          data: { companyId: t.company, cwd: path.join(t.dir, "reports") },
        }),
    ],
    [
      "unsupported_filesystem_entry",
      async (t: Task) => {
        const { execFileSync } = await import("node:child_process");
        execFileSync("mkfifo", [path.join(t.dir, "pipe")]);
      },
    ],
  ])("is kept with %s", async (reason, arrange) => {
    const t = await task();
    await arrange(t);
    await closeEvent(t);
    await stack.waitForReports("task-directories", (rs) =>
      rs.some((r) =>
        (r.entries ?? []).some(
          (e) => e.id === `isolated-workspaces/${t.company}/${t.issue}` && e.reason === reason,
        ),
      ),
    );
    expect(await exists(path.join(t.dir, "run.sh"))).toBe(true);
    expect((await workspaceRow(t)).status).toBe("active");
  });

  it.each([
    ["restore_point_unverified", "task-directories.sealed"],
    ["task_directory_not_restorable", "task-directories.read-back"],
  ])(
    "is kept with %s when the stored object is damaged at %s (it never reads back, or is never decoded whole)",
    async (reason, point) => {
      const t = await task();
      const before = await snapshotOf(t.dir);
      at[point] = async () => {
        const rp = await stack.db.executionWorkspaceRestorePoint.findFirstOrThrow({
          where: { executionWorkspaceId: t.workspace, status: "pending" },
        });
        await flipByte(path.join(stack.instanceRoot, "data", "storage", ...rp.storageKey.split("/")));
      };
      await closeEvent(t);
      await stack.waitForReports("task-directories", (rs) =>
        rs.some((r) =>
          (r.entries ?? []).some(
            (e) => e.id === `isolated-workspaces/${t.company}/${t.issue}` && e.reason === reason,
          ),
        ),
      );
      expect(at[point]).toBeUndefined();
      expect(await snapshotOf(t.dir)).toEqual(before);
      expect((await workspaceRow(t)).status).toBe("active");
      const rps = await stack.db.executionWorkspaceRestorePoint.findMany({
        where: { executionWorkspaceId: t.workspace },
      });
      expect(rps.map((r) => r.status).filter((s) => s !== "delete_requested" && s !== "deleted")).toEqual([]);
    },
  );
});

/** Flips one byte in the middle of a file. */
async function flipByte(file: string): Promise<void> {
  const handle = await open(file, "r+");
  try {
    const { size } = await handle.stat();
    const byte = Buffer.alloc(1);
    await handle.read(byte, 0, 1, Math.floor(size / 2));
    byte[0] = byte[0]! ^ 0xff;
    await handle.write(byte, 0, 1, Math.floor(size / 2));
  } finally {
    await handle.close();
  }
}
