/**
 * Isolated task directories when a step fails, through the real worker on real directories,
 * PostgreSQL, Redis and local_disk storage (spec: a fault loses nothing and leaves nothing
 * behind that a later sweep does not finish): the storage down or full while the directory is
 * saved, or an S3 gateway that is down (`storage_unavailable`), the rename (`rename_failed`) or the delete (`delete_failed`)
 * refused by the file system. The directory, or an active restore point, is always there;
 * the item is due again an hour later, and that job (the real job runner with its clock set
 * to the deadline) finishes the work once the fault is gone.
 */
import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { chmod, mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { FaultPoints, PermanentError } from "@reclaim/core";
import { startStack, type Stack } from "@reclaim/testkit";
import {
  actionsAt,
  closeEvent,
  exists,
  issueDirectory,
  reopen,
  runAt,
  snapshotOf,
  task,
  TASK_ENV,
  workspaceRow,
  type Task,
} from "@reclaim/testkit/src/fixtures/task-directories";
import { setDeletable } from "./native-session-backups.fixtures";

const DOMAIN = "task-directories";
const HOUR = 3_600_000;
const entryOf = (t: Task) => `isolated-workspaces/${t.company}/${t.issue}`;

let stack: Stack;
const { at, faults } = actionsAt(["task-directories.sealed"]);
beforeAll(async () => {
  stack = await startStack({ env: TASK_ENV, faults });
});
afterAll(async () => stack?.stop());

const deps = () => ({ db: stack.db, scheduler: stack.scheduler, instanceRoot: stack.instanceRoot });
const retention = async (t: Task) =>
  ((await workspaceRow(stack, t)).metadata as { isolatedTaskDirectoryRetention?: Record<string, string> })
    ?.isolatedTaskDirectoryRetention;
const restorePoints = (t: Task) =>
  stack.db.executionWorkspaceRestorePoint.findMany({ where: { executionWorkspaceId: t.workspace } });

/**
 * The first report with an entry of `t` saying `reason`, once the queues are idle; the
 * workspace's item deadline and the company's ledger deadlines then.
 */
async function firstEntry(t: Task, reason: string, outcome = "skipped", on: Stack = stack) {
  const said = (r: { entries?: { id: string; reason?: string; outcome: string }[] }) =>
    (r.entries ?? []).some((e) => e.id === entryOf(t) && e.reason === reason && e.outcome === outcome);
  const reports = await on.waitForReports(DOMAIN, (rs) => rs.some(said));
  await on.idle();
  const item = await on.db.reclaimItemDeadline.findUniqueOrThrow({
    where: { domain_itemId: { domain: DOMAIN, itemId: `ws:${t.workspace}` } },
  });
  const ledger = await on.db.reclaimDeadline.findMany({ where: { domain: DOMAIN, companyId: t.company } });
  return {
    startedAt: new Date(reports.find(said)!.startedAt).getTime(),
    dueAt: item.dueAt,
    ledger: ledger.map((l) => l.dueAt.getTime()),
  };
}

/** At the deadline the job saves (or finishes) and removes the directory; a reopen brings it back. */
async function removedThenRestored(t: Task, at: Date, before: Record<string, unknown>) {
  const report = await runAt(deps(), t.company, at);
  expect(report.entries).toContainEqual(expect.objectContaining({ id: entryOf(t), outcome: "removed" }));
  expect([await exists(t.dir), (await retention(t))?.state]).toEqual([false, "removed"]);
  expect(await readdir(path.dirname(t.dir))).toEqual([]);
  expect((await reopen(stack, t)).body.outcome).toBe("restored");
  expect(await snapshotOf(t.dir)).toEqual(before);
}

/** Every file (not directory) below `dir`. */
async function filesBelow(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (!e.isDirectory()) out.push(path.join(e.parentPath, e.name));
  return out;
}

const exec = promisify(execFile);

/** Whether entries of `dir` can be renamed: `chattr -i`/`+i` as root, else its mode. */
async function renamesIn(dir: string, allowed: boolean): Promise<void> {
  if (process.getuid?.() === 0) await exec("chattr", [allowed ? "-i" : "+i", dir]);
  else await chmod(dir, allowed ? 0o755 : 0o555);
}

/** The storage folder (`<instance>/data/storage`) down: a file where the folder was. */
async function storageDown(): Promise<{ restore(): Promise<void>; files(): Promise<string[]> }> {
  const dir = path.join(stack.instanceRoot, "data", "storage");
  const aside = `${dir}-aside`;
  await mkdir(dir, { recursive: true });
  await rename(dir, aside);
  await writeFile(dir, "not a folder\n");
  return {
    async restore() {
      await rm(dir);
      await rename(aside, dir);
    },
    files: async () => [],
  };
}

/** The storage folder down once the object is sealed, before it is read back and decoded. */
async function storageDownAtReadBack(): Promise<{ restore(): Promise<void>; files(): Promise<string[]> }> {
  let down: { restore(): Promise<void> } | null = null;
  at["task-directories.sealed"] = async () => {
    down = await storageDown();
  };
  return { restore: async () => down?.restore(), files: async () => [] };
}

/**
 * The storage folder full: a 1 MiB tmpfs mounted over it (a real ENOSPC; mounting needs root,
 * as in packages/shared/test/git/faults.test.ts) and 3 MiB of random bytes in the directory.
 */
async function storageFull(t: Task): Promise<{ restore(): Promise<void>; files(): Promise<string[]> }> {
  const dir = path.join(stack.instanceRoot, "data", "storage");
  await mkdir(dir, { recursive: true });
  await exec("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir]).catch((error: Error) => {
    throw new Error(`the disk-full case needs \`mount -t tmpfs\` (run the suite as root): ${error.message}`);
  });
  await writeFile(path.join(t.dir, "reports", "large.bin"), randomBytes(3 * 1024 * 1024));
  return { restore: async () => void (await exec("umount", [dir])), files: () => filesBelow(dir) };
}

describe("a fault while a closed task's directory is saved or removed loses nothing", () => {
  it.each([
    ["down (its folder is a file)", storageDown],
    ["full (ENOSPC on a 1 MiB tmpfs)", storageFull],
    ["down at the read-back (after the seal)", storageDownAtReadBack],
  ])(
    "storage %s while saving keeps the directory and looks again in an hour (storage_unavailable)",
    async (_what, fault) => {
      const t = await task(stack);
      const storage = await fault(t);
      let up = false;
      try {
        const before = await snapshotOf(t.dir);
        await closeEvent(stack, t);
        const kept = await firstEntry(t, "storage_unavailable");
        expect(await snapshotOf(t.dir)).toEqual(before);
        expect([(await workspaceRow(stack, t)).status, await retention(t)]).toEqual(["active", undefined]);
        // The capture's pending restore point is dropped and nothing of it is left in the
        // storage; restore-point retention deletes it, or (the storage down) tries again then.
        const [dropped, ...more] = await restorePoints(t);
        expect([dropped?.status, more]).toEqual([expect.stringMatching(/^(delete_requested|deleted)$/), []]);
        expect(await storage.files()).toEqual([]);
        if (dropped!.status === "delete_requested") {
          const retry = await stack.db.reclaimDeadline.findMany({
            where: { domain: "restore-point-retention", companyId: t.company },
          });
          expect(retry.length).toBeGreaterThan(0);
          if (dropped!.retryAt) expect(retry.map((d) => d.dueAt)).toContainEqual(dropped!.retryAt);
        }
        const hour = kept.startedAt + HOUR;
        expect([kept.dueAt?.getTime(), kept.ledger]).toEqual([hour, [hour]]);

        await storage.restore();
        up = true;
        for (const k of Object.keys(before)) if (k.startsWith("node_modules")) delete before[k];
        await removedThenRestored(t, new Date(hour), before);
      } finally {
        if (!up) await storage.restore();
      }
    },
  );

  it("a rename the file system refuses leaves the directory in place, the row archived with its active restore point, and the removal resumes an hour later (rename_failed)", async () => {
    const t = await task(stack);
    const before = await snapshotOf(t.dir);
    // Nothing in the company folder can be renamed (immutable as root, else read-only). The
    // directory itself is left as captured: a flag on it would change its state digest, and the
    // retry would rightly keep it as changed.
    const company = path.dirname(t.dir);
    await renamesIn(company, false);
    let hour: number;
    try {
      await closeEvent(stack, t);
      const failed = await firstEntry(t, "rename_failed", "failed");
      expect(await snapshotOf(t.dir)).toEqual(before);
      expect([(await workspaceRow(stack, t)).status, (await retention(t))?.state]).toEqual([
        "archived",
        "archived",
      ]);
      expect((await restorePoints(t)).map((rp) => rp.status)).toEqual(["active"]);
      hour = failed.startedAt + HOUR;
      expect([failed.dueAt?.getTime(), failed.ledger]).toEqual([hour, [hour]]);
    } finally {
      await renamesIn(company, true);
    }
    for (const k of Object.keys(before)) if (k.startsWith("node_modules")) delete before[k];
    await removedThenRestored(t, new Date(hour), before);
  });

  it("a delete the file system refuses leaves the renamed tree and the active restore point, and the delete is tried again an hour later (delete_failed)", async () => {
    const t = await task(stack);
    const before = await snapshotOf(t.dir);
    const file = ["reports", "summary.md"];
    // One file cannot be deleted (immutable as root, else its folder read-only).
    await setDeletable(path.join(t.dir, ...file), false);
    let renamed = t.dir;
    let hour: number;
    try {
      await closeEvent(stack, t);
      const failed = await firstEntry(t, "delete_failed", "failed");
      const state = (await retention(t))!;
      renamed = path.join(path.dirname(t.dir), state.expiredName!);
      expect([(await workspaceRow(stack, t)).status, state.state]).toEqual(["archived", "removing"]);
      expect(await readdir(path.dirname(t.dir))).toEqual([state.expiredName]);
      expect(await exists(path.join(renamed, ...file))).toBe(true);
      expect((await restorePoints(t)).map((rp) => rp.status)).toEqual(["active"]);
      hour = failed.startedAt + HOUR;
      expect([failed.dueAt?.getTime(), failed.ledger]).toEqual([hour, [hour]]);
    } finally {
      await setDeletable(path.join(renamed, ...file), true);
    }
    for (const k of Object.keys(before)) if (k.startsWith("node_modules")) delete before[k];
    await removedThenRestored(t, new Date(hour), before);
  });

  it("a capture that breaks off after registering its restore point leaves the directory, and restore-point retention deletes the abandoned capture at the end of its grace (abandoned_capture)", async () => {
    const t = await task(stack);
    const before = await snapshotOf(t.dir);
    at["task-directories.sealed"] = () => Promise.reject(new PermanentError("the capture broke off (test)"));
    await closeEvent(stack, t);
    await stack.waitForReports(DOMAIN, (rs) => rs.some((r) => r.companyId === t.company && r.error !== null));
    await stack.idle();
    expect(await snapshotOf(t.dir)).toEqual(before);
    const [pending, ...more] = await restorePoints(t);
    expect([pending?.status, more]).toEqual(["pending", []]);
    const file = path.join(stack.instanceRoot, "data", "storage", ...pending!.storageKey.split("/"));
    expect(await exists(file)).toBe(true);
    // Nothing polls: the grace's end is scheduled, or the sealed object would stay forever.
    const graceEnd = pending!.createdAt.getTime() + HOUR;
    const retention = await stack.db.reclaimDeadline.findMany({
      where: { domain: "restore-point-retention", companyId: t.company },
    });
    expect(retention.map((d) => d.dueAt.getTime())).toContain(graceEnd);
    // The grace's batch marks it delete_requested (abandoned_capture); the next deletes it.
    await runAt(deps(), t.company, new Date(graceEnd), "restore-point-retention");
    await runAt(deps(), t.company, new Date(graceEnd), "restore-point-retention");
    expect((await restorePoints(t)).map((rp) => rp.status)).toEqual(["deleted"]);
    expect(await exists(file)).toBe(false);
  });
});

describe("a closed task's directory on S3 storage", () => {
  let s3: Stack;
  beforeAll(async () => {
    // A gateway that is down: nothing listens on the port.
    s3 = await startStack({
      env: {
        ...TASK_ENV,
        PAPERCLIP_STORAGE_PROVIDER: "s3",
        PAPERCLIP_STORAGE_S3_BUCKET: "reclaim-down",
        PAPERCLIP_STORAGE_S3_ENDPOINT: "http://127.0.0.1:9",
        PAPERCLIP_STORAGE_S3_REGION: "us-east-1",
        PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE: "true",
        AWS_ACCESS_KEY_ID: "reclaim-test",
        AWS_SECRET_ACCESS_KEY: "reclaim-test-secret",
      },
    });
  });
  afterAll(async () => s3?.stop());

  it("a gateway that is down while saving keeps the directory and looks again in an hour (storage_unavailable)", async () => {
    const t = await task(s3);
    const before = await snapshotOf(t.dir);
    await closeEvent(s3, t);
    const kept = await firstEntry(t, "storage_unavailable", "skipped", s3);
    expect(await snapshotOf(t.dir)).toEqual(before);
    expect((await workspaceRow(s3, t)).status).toBe("active");
    const hour = kept.startedAt + HOUR;
    expect([kept.dueAt?.getTime(), kept.ledger]).toEqual([hour, [hour]]);
  });
});

describe("cancellation between entries", () => {
  it("a batch told to stop after a save still applies that save; the directories it did not judge stay due", async () => {
    const own = await startStack({ env: TASK_ENV, worker: false });
    try {
      const company = randomUUID();
      const saved = await task(own, { companyId: company });
      const orphan = await issueDirectory(own, { companyId: company, issue: "gone" });
      await closeEvent(own, saved);
      await closeEvent(own, { ...orphan, workspace: "" });
      const abort = new AbortController();
      const report = await runAt(
        { db: own.db, scheduler: own.scheduler, instanceRoot: own.instanceRoot },
        company,
        new Date(),
        "task-directories",
        {
          faults: FaultPoints.of({
            "task-directories.captured": () => abort.abort(new Error("shutting down")),
          }),
          signal: abort.signal,
        },
      );
      expect(report).toMatchObject({ error: null, cancelled: true });
      // The save is applied: the row archived with its active restore point.
      expect((await workspaceRow(own, saved)).status).toBe("archived");
      const points = await own.db.executionWorkspaceRestorePoint.findMany({
        where: { executionWorkspaceId: saved.workspace },
      });
      expect(points.map((p) => p.status)).toEqual(["active"]);
      // The orphan was not judged: its directory is there and its item is due.
      expect(await exists(orphan.dir)).toBe(true);
      const item = await own.db.reclaimItemDeadline.findUnique({
        where: { domain_itemId: { domain: DOMAIN, itemId: `dir:${orphan.issue}` } },
      });
      expect(item?.dueAt?.getTime()).toBeLessThanOrEqual(Date.now());
    } finally {
      await own.stop();
    }
  });
});
