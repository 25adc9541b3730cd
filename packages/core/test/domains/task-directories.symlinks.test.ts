/**
 * Isolated task directories: below the configured top folder (`<instance>/isolated-workspaces`)
 * nothing is followed, read through or written through a symbolic link, at any level, even
 * when a level is swapped for one after it was judged. At each step where the worker acts on
 * a judged directory (the re-read before the removal, the delete of the renamed tree, the
 * reopen's rename into place, the reopen's staging), the test moves the real company folder
 * aside (inside the instance) and puts a link in its place to a directory outside the instance
 * shaped exactly like what the step expects there. The outside directory is left exactly as it
 * was (listing, times, contents; atimes show nothing read), and the real files are all kept.
 */
import { randomUUID } from "node:crypto";
import { readdir, readFile, rename } from "node:fs/promises";
import path from "node:path";
import { daysAgo, outsideDirs, startStack, type Outside, type Stack } from "@reclaim/testkit";
import {
  actionsAt,
  closeEvent,
  exists,
  issueDirectory,
  removed,
  reopen,
  task,
  TASK_ENV,
  workspaceRow,
  type Task,
} from "@reclaim/testkit/src/fixtures/task-directories";

let stack: Stack;
/** What a test does at a fault point (once): swap the company folder. */
const { at, faults } = actionsAt([
  "task-directories.before-recheck",
  "task-directories.before-delete",
  "task-directories.staged",
  "task-directories.orphan-judged",
  "task-directories.orphan-renamed",
]);
beforeAll(async () => {
  stack = await startStack({ env: TASK_ENV, faults });
});
afterAll(async () => {
  await stack?.stop();
  await targets.removeAll();
  await agedTargets.removeAll();
});
const targets = outsideDirs();
/** Outside trees aged like an orphan past its grace: what an orphan's removal would take. */
const agedTargets = outsideDirs(daysAgo(30));

type Dir = { company: string; issue: string; dir: string };
const entryOf = (t: Dir) => `isolated-workspaces/${t.company}/${t.issue}`;

/** A task directory's files, under `prefix` (a name in the company folder). */
const shaped = (prefix: string) => ({
  [`${prefix}/reports/summary.md`]: "# the only copy\n",
  [`${prefix}/run.sh`]: "#!/bin/sh\necho hi\n",
});

/**
 * The company folder of `t` moved aside inside the instance, a link to a new directory outside
 * in its place holding `files`. Returns the outside directory and where the real folder is.
 */
async function swapCompany(
  t: Dir,
  files: Record<string, string>,
  outside = targets,
): Promise<{ outside: Outside; real: string }> {
  const company = path.dirname(t.dir);
  const real = path.join(stack.instanceRoot, `moved-aside-${randomUUID()}`);
  await rename(company, real);
  return { outside: await outside.plant(company, files), real };
}

async function entryFor(t: Dir, outcome: string) {
  const reports = await stack.waitForReports("task-directories", (rs) =>
    rs.some((r) => (r.entries ?? []).some((e) => e.id === entryOf(t) && e.outcome === outcome)),
  );
  return reports.flatMap((r) => r.entries ?? []).find((e) => e.id === entryOf(t) && e.outcome === outcome)!;
}

const retentionOf = async (t: Task) =>
  (
    (await workspaceRow(stack, t)).metadata as {
      isolatedTaskDirectoryRetention?: Record<string, string>;
    } | null
  )?.isolatedTaskDirectoryRetention;

/** The status of the restore point the workspace's retention state names. */
const restorePointStatus = async (t: Task) =>
  (
    await stack.db.executionWorkspaceRestorePoint.findUniqueOrThrow({
      where: { id: (await retentionOf(t))!.restorePointId! },
    })
  ).status;

describe("a level of a task directory swapped for a link after it was judged", () => {
  it("between the capture and the re-read before the removal: nothing outside is read, the directory is kept", async () => {
    const t = await task(stack);
    let swapped: { outside: Outside; real: string } | null = null;
    at["task-directories.before-recheck"] = async () => {
      swapped = await swapCompany(t, shaped(t.issue));
    };
    await closeEvent(stack, t);
    expect((await entryFor(t, "skipped")).reason).toBe("unsafe_task_directory");
    const { outside, real } = swapped!;
    expect(await outside.changes()).toEqual([]);
    // The real directory, untouched where it was moved to, and the workspace open again.
    expect(await readFile(path.join(real, t.issue, "reports", "summary.md"), "utf8")).toBe(
      "# the only copy\n",
    );
    expect((await workspaceRow(stack, t)).status).toBe("active");
  });

  it("between the rename and the delete: the outside tree of the recorded name is not read or removed", async () => {
    const t = await task(stack);
    let swapped: { outside: Outside; real: string } | null = null;
    at["task-directories.before-delete"] = async () => {
      const state = await retentionOf(t);
      swapped = await swapCompany(t, shaped(state!.expiredName!));
    };
    await closeEvent(stack, t);
    expect((await entryFor(t, "failed")).reason).toBe("unsafe_task_directory");
    const { outside, real } = swapped!;
    expect(await outside.changes()).toEqual([]);
    // The renamed tree is still where the real folder went; its restore point is still active.
    const state = await retentionOf(t);
    expect(state).toMatchObject({ state: "removing" });
    expect(await exists(path.join(real, state!.expiredName!, "run.sh"))).toBe(true);
    expect(await restorePointStatus(t)).toBe("active");
  });

  it("during a reopen, between the staging and the rename into place: nothing outside is renamed, the reopen fails", async () => {
    const t = await task(stack);
    await closeEvent(stack, t);
    await removed(stack, t);
    let swapped: { outside: Outside; real: string } | null = null;
    at["task-directories.staged"] = async () => {
      const staging = (await readdir(path.dirname(t.dir))).find((n) => n.startsWith(".restoring-"))!;
      swapped = await swapCompany(t, shaped(staging));
    };
    const answer = await reopen(stack, t);
    expect(answer.body).toMatchObject({ outcome: "failed", reason: "unsafe_task_directory" });
    const { outside } = swapped!;
    expect(await outside.changes()).toEqual([]);
    expect((await workspaceRow(stack, t)).status).toBe("archived");
    expect(await restorePointStatus(t)).toBe("active");
  });

  it("a company folder that became a link before a reopen: nothing is made or written outside, the reopen fails", async () => {
    const t = await task(stack);
    await closeEvent(stack, t);
    await removed(stack, t);
    const { outside } = await swapCompany(t, { "other.txt": "someone else's\n" });
    const answer = await reopen(stack, t);
    expect(answer.body).toMatchObject({ outcome: "failed", reason: "unsafe_task_directory" });
    expect(await outside.changes()).toEqual([]);
    expect((await workspaceRow(stack, t)).status).toBe("archived");
    expect(await restorePointStatus(t)).toBe("active");
  });

  it("an orphan, between its judgement and its rename: nothing outside is read or renamed, the orphan is kept", async () => {
    const o = await issueDirectory(stack, { issue: "done" });
    let swapped: { outside: Outside; real: string } | null = null;
    at["task-directories.orphan-judged"] = async () => {
      swapped = await swapCompany(o, { [`${o.issue}/notes.txt`]: "orphaned\n" }, agedTargets);
    };
    await stack.api("POST", "/v1/sweeps", { domain: "task-directories" });
    expect((await entryFor(o, "skipped")).reason).toBe("unsafe_task_directory");
    const { outside, real } = swapped!;
    expect(await outside.changes()).toEqual([]);
    expect(await readFile(path.join(real, o.issue, "notes.txt"), "utf8")).toBe("orphaned\n");
  });

  it("an orphan, between its rename and its delete: the outside tree of that name is not read or removed", async () => {
    const o = await issueDirectory(stack, { issue: "done" });
    let swapped: { outside: Outside; real: string } | null = null;
    let expired = "";
    at["task-directories.orphan-renamed"] = async () => {
      expired = (await readdir(path.dirname(o.dir))).find((n) => n.startsWith(".expired-"))!;
      swapped = await swapCompany(o, { [`${expired}/notes.txt`]: "orphaned\n" }, agedTargets);
    };
    await stack.api("POST", "/v1/sweeps", { domain: "task-directories" });
    expect((await entryFor(o, "failed")).reason).toBe("delete_failed");
    const { outside, real } = swapped!;
    expect(await outside.changes()).toEqual([]);
    // The renamed orphan is still where the real folder went, for the walk's leftover pass.
    expect(await readFile(path.join(real, expired, "notes.txt"), "utf8")).toBe("orphaned\n");
  });
});
