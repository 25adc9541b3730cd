/**
 * Isolated task directories, the rest of the spec through the real worker: the orphan walk
 * and its rules, a closed row its issue is still bound to (`preserved_and_removed`), planted
 * symbolic links never followed, the snapshot limits, the reopen's refusals and its expired
 * restore point, the controls (dry run, restore points disabled, the defaults).
 */
import { randomUUID } from "node:crypto";
import { lstat, mkdir, open, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { readConfigOf } from "@reclaim/core";
import { startStack, tempDir, waitFor, type Stack } from "@reclaim/testkit";
import {
  age,
  closeEvent,
  exists,
  issueDirectory,
  removed,
  reopen as reopenTask,
  snapshotOf,
  task,
  TASK_ENV,
  workspaceRow,
  type Task,
} from "@reclaim/testkit/src/fixtures/task-directories";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ env: TASK_ENV });
});
afterAll(async () => stack?.stop());

const DAY = 86_400_000;
const entryOf = (t: { company: string; issue: string }) => `isolated-workspaces/${t.company}/${t.issue}`;

async function reasonFor(
  t: { company: string; issue: string },
  what: (e: { outcome: string; reason?: string }) => boolean,
) {
  const reports = await stack.waitForReports("task-directories", (rs) =>
    rs.some((r) => (r.entries ?? []).some((e) => e.id === entryOf(t) && what(e))),
  );
  return reports.flatMap((r) => r.entries ?? []).find((e) => e.id === entryOf(t) && what(e))!;
}

const orphan = (opts: { issue?: "done" | "gone" }) => issueDirectory(stack, opts);

describe("the orphan walk", () => {
  it("removes an orphan whose issue is gone or closed past the grace, and keeps one a live lease of its tree's run refers to", async () => {
    const gone = await orphan({ issue: "gone" });
    const closed = await orphan({ issue: "done" });
    const leased = await orphan({ issue: "done" });
    const run = await stack.db.heartbeatRun.create({
      data: {
        companyId: leased.company,
        status: "succeeded",
        finishedAt: new Date(Date.now() - 9 * DAY),
        contextSnapshot: { issueId: leased.issue },
      },
    });
    await stack.db.environmentLease.create({
      data: { companyId: leased.company, heartbeatRunId: run.id, status: "active" },
    });
    const sweep = await stack.api("POST", "/v1/sweeps", { domain: "task-directories" });
    expect(sweep.status).toBe(202);
    await waitFor(async () => !(await exists(gone.dir)) && !(await exists(closed.dir)), {
      what: "orphans removed",
      timeoutMs: 30_000,
    });
    expect((await reasonFor(leased, (e) => e.outcome === "skipped")).reason).toBe(
      "live_or_unresolved_consumer",
    );
    expect(await readFile(path.join(leased.dir, "notes.txt"), "utf8")).toBe("orphaned\n");
  });

  it("keeps an orphan whose contents changed during the grace", async () => {
    const o = await orphan({ issue: "done" });
    await writeFile(path.join(o.dir, "fresh.txt"), "just now\n");
    await stack.api("POST", "/v1/sweeps", { domain: "task-directories" });
    expect((await reasonFor(o, (e) => e.outcome === "skipped")).reason).toBe("recently_changed");
    expect(await exists(path.join(o.dir, "fresh.txt"))).toBe(true);
  });

  it("saves a closed row its issue is still bound to in a restore point, and removes it (preserved_and_removed)", async () => {
    const t = await task(stack);
    await stack.db.executionWorkspace.update({
      where: { id: t.workspace },
      data: { status: "archived", closedAt: new Date() },
    });
    await stack.api("POST", "/v1/sweeps", { domain: "task-directories" });
    await waitFor(async () => !(await exists(t.dir)), { what: "the directory removed", timeoutMs: 30_000 });
    const rp = await stack.db.executionWorkspaceRestorePoint.findFirstOrThrow({
      where: { executionWorkspaceId: t.workspace },
    });
    expect(rp.status).toBe("active");
    expect((await reopenTask(stack, t, "comment")).body.outcome).toBe("restored");
    expect(await readFile(path.join(t.dir, "reports", "summary.md"), "utf8")).toBe("# the only copy\n");
  });
});

describe("symbolic links are never followed", () => {
  it("a task directory that is a link to a directory outside the instance is kept, and nothing outside is read or changed", async () => {
    const outside = await tempDir("reclaim-outside-");
    try {
      await writeFile(path.join(outside.path, "secret.txt"), "outside\n");
      const t = await task(stack);
      await rm(t.dir, { recursive: true });
      await symlink(outside.path, t.dir);
      await closeEvent(stack, t);
      expect((await reasonFor(t, (e) => e.outcome === "skipped")).reason).toBe("unsafe_task_directory");
      expect(await readdir(outside.path)).toEqual(["secret.txt"]);
      expect((await lstat(t.dir)).isSymbolicLink()).toBe(true);
      expect(
        await stack.db.executionWorkspaceRestorePoint.count({ where: { executionWorkspaceId: t.workspace } }),
      ).toBe(0);
    } finally {
      await outside.remove();
    }
  });

  it("the orphan walk never follows a company folder that is a link: an aged, orphan-shaped directory outside stays", async () => {
    const outside = await tempDir("reclaim-outside-");
    try {
      const issue = randomUUID();
      await mkdir(path.join(outside.path, issue));
      await writeFile(path.join(outside.path, issue, "keep.txt"), "outside\n");
      await age(path.join(outside.path, issue), 30);
      const company = randomUUID();
      await mkdir(path.join(stack.instanceRoot, "isolated-workspaces"), { recursive: true });
      await symlink(outside.path, path.join(stack.instanceRoot, "isolated-workspaces", company));
      const sweep = await stack.api("POST", "/v1/sweeps", { domain: "task-directories" });
      await waitFor(
        async () => (await stack.api("GET", `/v1/jobs/${sweep.body.jobId}`)).body.state === "completed",
        {
          what: "the walk",
          timeoutMs: 30_000,
        },
      );
      await stack.idle();
      expect(await readFile(path.join(outside.path, issue, "keep.txt"), "utf8")).toBe("outside\n");
      expect(await readdir(outside.path)).toEqual([issue]);
    } finally {
      await outside.remove();
    }
  });

  it("a link inside is saved as a link and its target left alone", async () => {
    const outside = await tempDir("reclaim-outside-");
    try {
      await writeFile(path.join(outside.path, "big.txt"), "outside\n");
      const t = await task(stack);
      await symlink(outside.path, path.join(t.dir, "escape"));
      await closeEvent(stack, t);
      await waitFor(async () => !(await exists(t.dir)), { what: "the directory removed", timeoutMs: 30_000 });
      expect(await readdir(outside.path)).toEqual(["big.txt"]);
      await stack.api(
        "POST",
        `/v1/companies/${t.company}/execution-workspaces/${t.workspace}/reopen?wait=60`,
        { reason: "run" },
      );
      expect((await lstat(path.join(t.dir, "escape"))).isSymbolicLink()).toBe(true);
    } finally {
      await outside.remove();
    }
  });
});

describe("the restore point limits", () => {
  async function sparse(file: string, bytes: number) {
    const handle = await open(file, "w");
    await handle.truncate(bytes);
    await handle.close();
  }
  it.each([
    [
      "task_directory_file_too_large",
      async (t: Task) => sparse(path.join(t.dir, "huge.bin"), 64 * 1024 * 1024 + 1),
    ],
    [
      "task_directory_too_large",
      async (t: Task) => {
        for (let i = 0; i < 5; i++) await sparse(path.join(t.dir, `part-${i}.bin`), 60 * 1024 * 1024);
      },
    ],
    [
      "task_directory_too_many_files",
      async (t: Task) => {
        await mkdir(path.join(t.dir, "many"));
        for (let i = 0; i < 20_001; i += 1000) {
          const batch = Array.from({ length: Math.min(1000, 20_001 - i) }, (_, j) => i + j);
          await Promise.all(batch.map((n) => writeFile(path.join(t.dir, "many", `f${n}`), "")));
        }
      },
    ],
  ])(
    "refuse with %s and keep the directory",
    async (reason, arrange) => {
      const t = await task(stack);
      await arrange(t);
      await closeEvent(stack, t);
      expect((await reasonFor(t, (e) => e.outcome === "skipped")).reason).toBe(reason);
      expect((await workspaceRow(stack, t)).status).toBe("active");
      expect(await exists(path.join(t.dir, "run.sh"))).toBe(true);
    },
    120_000,
  );
});

describe("reopen", () => {
  async function removedTask(): Promise<Task> {
    const t = await task(stack);
    await closeEvent(stack, t);
    await removed(stack, t);
    return t;
  }
  const reopen = (t: Task) =>
    stack.api("POST", `/v1/companies/${t.company}/execution-workspaces/${t.workspace}/reopen?wait=60`, {
      reason: "run",
    });

  it("replaces an empty directory in the way", async () => {
    const t = await removedTask();
    await mkdir(t.dir);
    expect((await reopen(t)).body.outcome).toBe("restored");
    expect(await exists(path.join(t.dir, "run.sh"))).toBe(true);
  });

  it("fails and keeps the workspace closed when a non-empty different directory is in the way, overwriting nothing", async () => {
    const t = await removedTask();
    await mkdir(t.dir);
    await writeFile(path.join(t.dir, "other.txt"), "someone else's\n");
    expect((await reopen(t)).body).toMatchObject({ outcome: "failed", reason: "task_directory_in_the_way" });
    expect(await readdir(t.dir)).toEqual(["other.txt"]);
    expect((await workspaceRow(stack, t)).status).toBe("archived");
    const leftovers = (await readdir(path.dirname(t.dir))).filter((n) => n.startsWith(".restoring-"));
    expect(leftovers).toEqual([]);
  });

  it("starts an empty directory with the warning when the restore point has expired", async () => {
    const t = await removedTask();
    await stack.db.executionWorkspaceRestorePoint.updateMany({
      where: { executionWorkspaceId: t.workspace },
      data: { status: "deleted" },
    });
    const answer = (await reopen(t)).body;
    expect(answer).toMatchObject({
      outcome: "fresh",
      path: t.dir,
      warning: expect.stringContaining("no longer"),
    });
    expect(await readdir(t.dir)).toEqual([]);
    expect((await workspaceRow(stack, t)).status).toBe("active");
  });
});

describe("a sweep", () => {
  it("saves and removes at most 8 directories, and skipped workspaces do not use up that limit", async () => {
    const company = randomUUID();
    const tasks: Task[] = [];
    for (let i = 0; i < 12; i++) {
      const t = await task(stack, { companyId: company });
      if (i < 3)
        await stack.db.issue.update({ where: { id: t.issue }, data: { executionWorkspaceId: null } });
      tasks.push(t);
    }
    await stack.api("POST", "/v1/events", {
      events: tasks.map((t) => ({
        type: "issue.changed",
        companyId: company,
        issueId: t.issue,
        status: "done",
      })),
    });
    for (const t of tasks.slice(3)) await removed(stack, t);
    const reports = (
      await stack.waitForReports(
        "task-directories",
        (rs) => rs.filter((r) => r.companyId === company && r.candidates > 0).length >= 2,
      )
    )
      .filter((r) => r.companyId === company && r.candidates > 0)
      .sort((a, b) => Date.parse(String(a.startedAt)) - Date.parse(String(b.startedAt)));
    expect(reports.map((r) => r.candidates)).toEqual([8, 1]);
    expect(reports[0]!.skipped["issue_not_bound"]).toBe(3);
  }, 180_000);
});

describe("the controls", () => {
  it("a dry run reports the candidate and changes nothing, without restore points", async () => {
    const dry = await startStack({
      env: {
        ...TASK_ENV,
        PAPERCLIP_TASK_DIRECTORY_RETENTION_DRY_RUN: "true",
        PAPERCLIP_GIT_RESTORE_POINTS_ENABLED: "false",
      },
    });
    try {
      const t = await task(dry);
      await closeEvent(dry, t);
      await dry.waitForReports("task-directories", (rs) =>
        rs.some((r) => (r.entries ?? []).some((e) => e.id === entryOf(t) && e.outcome === "candidate")),
      );
      expect(await exists(path.join(t.dir, "run.sh"))).toBe(true);
      expect((await workspaceRow(dry, t)).status).toBe("active");
      expect(await dry.db.executionWorkspaceRestorePoint.count()).toBe(0);
    } finally {
      await dry.stop();
    }
  });

  it("with restore points disabled and removal on, nothing is saved or removed and restore_points_disabled is reported", async () => {
    const off = await startStack({ env: { ...TASK_ENV, PAPERCLIP_GIT_RESTORE_POINTS_ENABLED: "false" } });
    try {
      const t = await task(off);
      const before = await snapshotOf(t.dir);
      await closeEvent(off, t);
      const reports = await off.waitForReports("task-directories", (rs) =>
        rs.some((r) => (r.entries ?? []).some((e) => e.id === entryOf(t))),
      );
      const entries = reports.flatMap((r) => r.entries ?? []).filter((e) => e.id === entryOf(t));
      expect(entries.map((e) => [e.outcome, e.reason])).toEqual([["skipped", "restore_points_disabled"]]);
      expect(await snapshotOf(t.dir)).toEqual(before);
      expect((await workspaceRow(off, t)).status).toBe("active");
      expect(await off.db.executionWorkspaceRestorePoint.count()).toBe(0);
      expect(await readdir(path.join(off.instanceRoot, "data", "storage")).catch(() => [])).toEqual([]);
      // Kept until something changes: no deadline for it.
      await off.idle();
      const item = await off.db.reclaimItemDeadline.findFirstOrThrow({
        where: { itemId: `ws:${t.workspace}` },
      });
      expect([item.dueAt, item.reason]).toEqual([null, "restore_points_disabled"]);
    } finally {
      await off.stop();
    }
  });

  it("default off: with the spec's defaults nothing handles task directories; the grace is at least a day", async () => {
    expect(readConfigOf("task-directories", {})).toMatchObject({
      enabled: false,
      dryRun: true,
      orphanGraceMs: 7 * DAY,
      terminalDelayMs: 3 * DAY,
      restorePointsEnabled: false,
    });
    expect(() =>
      readConfigOf("task-directories", { PAPERCLIP_TASK_DIRECTORY_ORPHAN_GRACE_DAYS: "0" }),
    ).toThrow("PAPERCLIP_TASK_DIRECTORY_ORPHAN_GRACE_DAYS: must be at least 1 (got 0)");
    const plain = await startStack();
    try {
      const t = await task(plain);
      const before = await snapshotOf(t.dir);
      await closeEvent(plain, t);
      const sweep = await plain.api("POST", "/v1/sweeps", { domain: "task-directories" });
      expect([sweep.status, sweep.body.error]).toEqual([409, "RECLAIM_ERR_DOMAIN_DISABLED"]);
      await plain.idle();
      expect(await plain.db.reclaimBatchReport.count({ where: { domain: "task-directories" } })).toBe(0);
      expect(await snapshotOf(t.dir)).toEqual(before);
    } finally {
      await plain.stop();
    }
  });
});
