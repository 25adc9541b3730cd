/**
 * Isolated task directories through the real worker, on real directories, PostgreSQL, Redis
 * and local_disk storage: a closed task's directory is saved in a sealed restore point and
 * removed, and a reopen brings back every byte, mode and link target; a file touched between
 * capture and deletion keeps the directory (`task_directory_changed`); the skip reasons.
 */
import { randomUUID } from "node:crypto";
import { chmod, lstat, mkdir, readFile, readlink, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { FaultPoints } from "@reclaim/core";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";

const KEY = "a".repeat(64);
const ENV = {
  PAPERCLIP_TASK_DIRECTORY_RETENTION_ENABLED: "true",
  PAPERCLIP_TASK_DIRECTORY_RETENTION_DRY_RUN: "false",
  PAPERCLIP_GIT_RESTORE_POINTS_ENABLED: "true",
  PAPERCLIP_GIT_RESTORE_POINT_TERMINAL_DELAY_DAYS: "0",
  PAPERCLIP_SECRETS_MASTER_KEY: KEY,
};

let stack: Stack;
let touchBeforeRename: (() => Promise<void>) | null = null;
beforeAll(async () => {
  stack = await startStack({
    env: ENV,
    faults: FaultPoints.of({
      "task-directories.before-recheck": async () => {
        await touchBeforeRename?.();
      },
    }),
  });
});
afterAll(async () => stack?.stop());

interface Task {
  company: string;
  issue: string;
  workspace: string;
  dir: string;
}

async function task(opts: { status?: string; closedDaysAgo?: number } = {}): Promise<Task> {
  const company = randomUUID();
  const issue = randomUUID();
  const workspace = randomUUID();
  const dir = path.join(stack.instanceRoot, "isolated-workspaces", company, issue);
  const status = opts.status ?? "done";
  await stack.db.issue.create({
    data: {
      id: issue,
      companyId: company,
      status,
      completedAt: status === "done" ? new Date(Date.now() - (opts.closedDaysAgo ?? 10) * 86_400_000) : null,
    },
  });
  await stack.db.executionWorkspace.create({
    data: {
      id: workspace,
      companyId: company,
      sourceIssueId: issue,
      mode: "isolated_workspace",
      strategyType: "project_primary",
      providerType: "local_fs",
      cwd: dir,
    },
  });
  await stack.db.issue.update({ where: { id: issue }, data: { executionWorkspaceId: workspace } });
  await mkdir(path.join(dir, "reports", "deep"), { recursive: true });
  await writeFile(path.join(dir, "reports", "summary.md"), "# the only copy\n");
  await writeFile(path.join(dir, "reports", "deep", "data.bin"), Buffer.from([0, 1, 2, 255, 254]));
  await writeFile(path.join(dir, "run.sh"), "#!/bin/sh\necho hi\n");
  await chmod(path.join(dir, "run.sh"), 0o750);
  await symlink("reports/summary.md", path.join(dir, "latest"));
  await symlink("/etc/passwd", path.join(dir, "outside-link"));
  await writeFile(path.join(dir, "package.json"), "{}\n");
  await mkdir(path.join(dir, "node_modules", "left-out"), { recursive: true });
  await writeFile(path.join(dir, "node_modules", "left-out", "index.js"), "x");
  return { company, issue, workspace, dir };
}

async function closeEvent(t: Task) {
  const r = await stack.api("POST", "/v1/events", {
    events: [{ type: "issue.changed", companyId: t.company, issueId: t.issue, status: "done" }],
  });
  expect(r.status).toBe(202);
}

const workspaceRow = (t: Task) =>
  stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.workspace } });
const exists = (p: string) =>
  lstat(p).then(
    () => true,
    () => false,
  );

async function snapshotOf(dir: string) {
  const files: Record<string, unknown> = {};
  const walk = async (rel: string) => {
    const { readdir } = await import("node:fs/promises");
    for (const name of (await readdir(path.join(dir, rel))).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = await lstat(path.join(dir, r));
      if (st.isSymbolicLink()) files[r] = { link: await readlink(path.join(dir, r)) };
      else if (st.isDirectory()) {
        files[r] = { dir: st.mode & 0o7777 };
        await walk(r);
      } else
        files[r] = { mode: st.mode & 0o7777, bytes: (await readFile(path.join(dir, r))).toString("base64") };
    }
  };
  await walk("");
  return files;
}

describe("a closed task's directory", () => {
  it("is saved, removed, and restored by a reopen with every byte, mode and link target (local_disk)", async () => {
    const t = await task();
    const before = await snapshotOf(t.dir);
    delete before["node_modules"];
    delete before["node_modules/left-out"];
    delete before["node_modules/left-out/index.js"];
    await closeEvent(t);
    await waitFor(async () => !(await exists(t.dir)) && (await workspaceRow(t)).status === "archived", {
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

  it("is kept when a file is touched between the capture and the deletion (task_directory_changed)", async () => {
    const t = await task();
    touchBeforeRename = async () => {
      const at = new Date();
      await utimes(path.join(t.dir, "run.sh"), at, at);
      touchBeforeRename = null;
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
    expect(rps.map((r) => r.status)).toEqual(expect.arrayContaining(["delete_requested"]));
    expect(rps.some((r) => r.status === "active")).toBe(false);
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
        r.entries.some((e) => e.id === `isolated-workspaces/${t.company}/${t.issue}` && e.reason === reason),
      ),
    );
    expect(await exists(path.join(t.dir, "run.sh"))).toBe(true);
    expect((await workspaceRow(t)).status).toBe("active");
  });
});
