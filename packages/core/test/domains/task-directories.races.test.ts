/**
 * Isolated task directories when Paperclip changes something between two steps, through the
 * real worker on real directories, PostgreSQL, Redis and local_disk storage: each step reads
 * again under the issue's source lock and the workspace lifecycle lock, and what changed
 * keeps the directory. The workspace closed, or closed and reopened, between the capture and
 * the archive (`workspace_changed`); the row reopened between the archive and the rename
 * (`workspace_reopened`); the issue deleted before the judgement or between the capture and
 * the archive (`issue_missing`); an open row pointing at an orphan once it was judged
 * (`workspace_appeared`).
 */
import path from "node:path";
import { archiveWorkspace, lockWorkspaceLifecycle, reactivateWorkspace, type Tx } from "@reclaim/core";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  actionsAt,
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
const entryOf = (t: { company: string; issue: string }) => `isolated-workspaces/${t.company}/${t.issue}`;

let stack: Stack;
const { at, faults } = actionsAt([
  "task-directories.captured",
  "task-directories.before-rename",
  "task-directories.orphan-judged",
]);
beforeAll(async () => {
  stack = await startStack({ env: TASK_ENV, faults });
});
afterAll(async () => stack?.stop());

const retention = async (t: Task) =>
  ((await workspaceRow(stack, t)).metadata as { isolatedTaskDirectoryRetention?: Record<string, string> })
    ?.isolatedTaskDirectoryRetention;
const restorePointStatuses = async (t: Task) =>
  (
    await stack.db.executionWorkspaceRestorePoint.findMany({ where: { executionWorkspaceId: t.workspace } })
  ).map((rp) => rp.status);

/** Waits for an entry of the directory saying `reason`, then for idle queues; the item's deadline. */
async function keptWith(t: { company: string; issue: string }, item: string, reason: string) {
  await stack.waitForReports(DOMAIN, (rs) =>
    rs.some((r) => (r.entries ?? []).some((e) => e.id === entryOf(t) && e.reason === reason)),
  );
  await stack.idle();
  const row = await stack.db.reclaimItemDeadline.findUniqueOrThrow({
    where: { domain_itemId: { domain: DOMAIN, itemId: item } },
  });
  return row.dueAt;
}

/**
 * The capture was dropped at the archive: the fault point's action ran, every file is as it
 * was, the row has `status` and no retention state, no restore point is left but a dropped one.
 */
async function keptUnsaved(t: Task, before: Record<string, unknown>, status: string) {
  expect(at["task-directories.captured"]).toBeUndefined();
  expect(await snapshotOf(t.dir)).toEqual(before);
  expect([(await workspaceRow(stack, t)).status, await retention(t)]).toEqual([status, undefined]);
  expect((await restorePointStatuses(t)).filter((s) => s !== "delete_requested" && s !== "deleted")).toEqual(
    [],
  );
}

/** Paperclip's own transition of the row, under the workspace lifecycle lock. */
const paperclip = (t: Task, change: (tx: Tx) => Promise<unknown>) =>
  stack.db.$transaction(async (tx) => {
    await lockWorkspaceLifecycle(tx, t.workspace);
    await change(tx);
  });
const archive = (t: Task) =>
  paperclip(t, (tx) =>
    archiveWorkspace(tx, {
      companyId: t.company,
      workspaceId: t.workspace,
      now: new Date(),
      cleanupReason: "terminal",
      metadata: {},
    }),
  );
const reactivate = (t: Task) =>
  paperclip(t, (tx) =>
    reactivateWorkspace(tx, {
      companyId: t.company,
      workspaceId: t.workspace,
      now: new Date(),
      reopenPending: false,
    }),
  );

describe("a change between two steps keeps the directory", () => {
  it.each([
    ["closed", "archived", archive],
    [
      "closed and reopened",
      "active",
      async (t: Task) => {
        await archive(t);
        await reactivate(t);
      },
    ],
  ])(
    "the workspace %s by Paperclip between the capture and the archive: kept, the capture dropped, saved again at its next change (workspace_changed)",
    async (_what, status, change) => {
      const t = await task(stack);
      const before = await snapshotOf(t.dir);
      at["task-directories.captured"] = () => change(t);
      await closeEvent(stack, t);
      expect(await keptWith(t, `ws:${t.workspace}`, "workspace_changed")).toBeNull();
      await keptUnsaved(t, before, status);
      if (status === "archived") {
        // Closed by Paperclip with its issue still bound: its change saves and removes it.
        await stack.api("POST", "/v1/events", {
          events: [
            { type: "workspace.changed", companyId: t.company, workspaceId: t.workspace, status: "archived" },
          ],
        });
        await removed(stack, t);
        expect(await restorePointStatuses(t)).toContain("active");
      }
    },
  );

  it("the workspace reopened between the archive and the rename: the removal stops, the directory and its files stay (workspace_reopened)", async () => {
    const t = await task(stack);
    const before = await snapshotOf(t.dir);
    let answer: unknown;
    at["task-directories.before-rename"] = async () => {
      answer = (await reopen(stack, t)).body;
    };
    await closeEvent(stack, t);
    expect(await keptWith(t, `ws:${t.workspace}`, "workspace_reopened")).toBeNull();
    // The reopen found the saved tree in place: restored, the row active, the restore point superseded.
    expect(answer).toMatchObject({ outcome: "restored", path: t.dir });
    expect(await snapshotOf(t.dir)).toEqual(before);
    expect([(await workspaceRow(stack, t)).status, await retention(t)]).toEqual(["active", undefined]);
    expect(await restorePointStatuses(t)).toEqual([expect.stringMatching(/^(superseded|deleted)$/)]);
    expect((await stack.db.issue.findUniqueOrThrow({ where: { id: t.issue } })).executionWorkspaceId).toBe(
      t.workspace,
    );
  });

  it.each([
    ["before the judgement", "before"],
    ["between the capture and the archive (under the locks)", "captured"],
  ])(
    "the source issue deleted %s: the workspace and its directory are kept (issue_missing)",
    async (_when, moment) => {
      const t = await task(stack);
      const before = await snapshotOf(t.dir);
      const deleteIssue = () => stack.db.issue.delete({ where: { id: t.issue } }).then(() => undefined);
      if (moment === "before") await deleteIssue();
      else at["task-directories.captured"] = deleteIssue;
      await stack.api("POST", "/v1/events", {
        events: [{ type: "workspace.changed", companyId: t.company, workspaceId: t.workspace }],
      });
      expect(await keptWith(t, `ws:${t.workspace}`, "issue_missing")).toBeNull();
      await keptUnsaved(t, before, "active");
    },
  );

  it("an open row pointing at an orphan once it was judged keeps it, and that row's item judges it (workspace_appeared)", async () => {
    const o = await issueDirectory(stack);
    const before = await snapshotOf(o.dir);
    let appeared = "";
    at["task-directories.orphan-judged"] = async () => {
      // Paperclip starts work on the issue again in a new workspace at the directory.
      await stack.db.issue.update({
        where: { id: o.issue },
        data: { status: "in_progress", completedAt: null },
      });
      appeared = (await otherRow(stack, o, { status: "active", cwd: o.dir })).id;
      await stack.db.issue.update({ where: { id: o.issue }, data: { executionWorkspaceId: appeared } });
    };
    await stack.api("POST", "/v1/events", {
      events: [{ type: "issue.changed", companyId: o.company, issueId: o.issue, status: "done" }],
    });
    await keptWith(o, `dir:${o.issue}`, "workspace_appeared");
    // Looked at again at once: the directory is the open row's now, which keeps it (issue_open).
    expect(await keptWith(o, `ws:${appeared}`, "issue_open")).toBeNull();
    expect(await snapshotOf(o.dir)).toEqual(before);
    expect(await exists(path.join(o.dir, "notes.txt"))).toBe(true);
    await waitFor(
      async () =>
        (
          await stack.db.reclaimItemDeadline.findUniqueOrThrow({
            where: { domain_itemId: { domain: DOMAIN, itemId: `dir:${o.issue}` } },
          })
        ).dueAt === null,
      { what: "the directory's item settled" },
    );
  });
});
