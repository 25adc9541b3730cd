/**
 * Restore-point retention: each review rule of the spec, on real issue trees, real ledger
 * rows and real sealed objects (local_disk), through the scheduler API and a real worker.
 * Issue-change wake-ups are pushed far out (RECLAIM_RESTORE_POINT_SETTLE_MS) so that only the
 * sweeps of these tests run the checks.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { readConfigOf } from "@reclaim/core";
import { createLocalDiskProvider, type StorageProvider } from "@reclaim/shared";
import { startStack, type Stack } from "@reclaim/testkit";
import {
  closeIssue,
  DAY_MS,
  deadlinesOf,
  insertChain,
  insertIssue,
  insertRestorePoint,
  MINUTE_MS,
  objectState,
  outcomeOf,
  restorePointRow,
  startHookServer,
  storedRestorePoint,
  sweepRestorePoints,
  type HookServer,
} from "@reclaim/testkit/src/fixtures/restore-points";

let stack: Stack;
let storage: StorageProvider;
let hook: HookServer;
beforeAll(async () => {
  hook = await startHookServer();
  stack = await startStack({
    env: { ...hook.env, RECLAIM_RESTORE_POINT_SETTLE_MS: "600000" },
  });
  storage = createLocalDiskProvider({ baseDir: path.join(stack.instanceRoot, "data", "storage") });
});
afterAll(async () => {
  await stack?.stop();
  await hook?.close();
});
beforeEach(() => hook.respondWith(204));

const ago = (ms: number) => new Date(Date.now() - ms);
const near = (a: Date | null | undefined, b: number, within = 60_000) =>
  a !== null && a !== undefined && Math.abs(a.getTime() - b) < within;

describe("review of an active restore point", () => {
  it("while its tree is open clears delete_after and schedules nothing", async () => {
    const company = randomUUID();
    const [root, leaf] = await insertChain(stack, company, 2);
    await closeIssue(stack, leaf!);
    const id = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: root!,
      deleteAfter: ago(1000),
    });
    const report = await sweepRestorePoints(stack, company);
    expect(outcomeOf(report, id)).toBe("tree_open");
    expect((await restorePointRow(stack, id)).deleteAfter).toBeNull();
    expect(await deadlinesOf(stack, company)).toEqual(new Map());
  });

  it("of a closed tree expires retention days after the tree's latest close (done or cancelled)", async () => {
    const company = randomUUID();
    const root = await insertIssue(stack, { companyId: company, status: "done", closedAt: ago(40 * DAY_MS) });
    const leafClose = ago(10 * DAY_MS);
    await insertIssue(stack, {
      companyId: company,
      parentId: root,
      status: "cancelled",
      closedAt: leafClose,
    });
    await insertIssue(stack, {
      companyId: company,
      parentId: root,
      status: "done",
      closedAt: ago(30 * DAY_MS),
    });
    const id = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: root,
      deleteAfter: ago(1000),
    });
    const report = await sweepRestorePoints(stack, company);
    expect(outcomeOf(report, id)).toBe("retention_pending");
    const expiry = leafClose.getTime() + 90 * DAY_MS;
    const row = await restorePointRow(stack, id);
    expect(row.status).toBe("active");
    expect(row.deleteAfter!.getTime()).toBe(expiry);
    expect((await deadlinesOf(stack, company)).get("retention")?.getTime()).toBe(expiry);
  });

  it("counts only the source issue's own subtree, not its parent's other children", async () => {
    const company = randomUUID();
    const [root, source] = await insertChain(stack, company, 2, "done", ago(100 * DAY_MS));
    await insertIssue(stack, { companyId: company, parentId: root, status: "todo" }); // open sibling
    const id = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: source!,
      deleteAfter: ago(1000),
    });
    const report = await sweepRestorePoints(stack, company);
    expect(report.entries).toContainEqual(
      expect.objectContaining({ id: `restore-point/${id}`, outcome: "candidate", reason: "tree_closed" }),
    );
    expect((await restorePointRow(stack, id)).status).toBe("delete_requested");
  });

  it("of a tree closed longer ago expires at once: expiring, the hook, then deletion; never the object while expiring", async () => {
    const company = randomUUID();
    const [root] = await insertChain(stack, company, 3, "done", ago(91 * DAY_MS));
    const point = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: root!,
      deleteAfter: ago(1000),
    });
    const seenDuringHook: { status: string; object: string }[] = [];
    hook.onCall(async (call) => {
      if (call.body.restorePoint.id !== point.id) return;
      seenDuringHook.push({
        status: (await restorePointRow(stack, point.id)).status,
        object: await objectState(storage, point.storageKey),
      });
    });
    const first = await sweepRestorePoints(stack, company);
    expect(first.entries).toContainEqual(
      expect.objectContaining({ outcome: "candidate", reason: "tree_closed" }),
    );
    expect(seenDuringHook).toEqual([{ status: "expiring", object: "present" }]);
    const call = hook.calls.find((c) => c.body.restorePoint.id === point.id)!;
    expect(call.signatureValid).toBe(true);
    expect(call.body).toMatchObject({
      type: "restore_point.expiring",
      restorePoint: { companyId: company, storageKey: point.storageKey },
    });
    // The hook only requests deletion; the object goes in a later batch.
    expect((await restorePointRow(stack, point.id)).status).toBe("delete_requested");
    expect(await objectState(storage, point.storageKey)).toBe("present");

    const second = await sweepRestorePoints(stack, company);
    expect(outcomeOf(second, point.id)).toBe("removed");
    const row = await restorePointRow(stack, point.id);
    expect(row.status).toBe("deleted");
    expect(row.deletedAt).not.toBeNull();
    expect(await objectState(storage, point.storageKey)).toBe("absent");
    hook.onCall(() => undefined);
  });

  it("whose source issue is gone deletes it without the expiry hook", async () => {
    const company = randomUUID();
    const point = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: randomUUID(),
      deleteAfter: ago(1000),
    });
    const before = hook.calls.length;
    const first = await sweepRestorePoints(stack, company);
    expect(first.entries).toContainEqual(expect.objectContaining({ reason: "source_issue_gone" }));
    await sweepRestorePoints(stack, company);
    expect((await restorePointRow(stack, point.id)).status).toBe("deleted");
    expect(await objectState(storage, point.storageKey)).toBe("absent");
    expect(hook.calls.slice(before).filter((c) => c.body.restorePoint.id === point.id)).toEqual([]);
  });

  it("of a task directory counts from the later of the tree's close and its removal (activation)", async () => {
    const company = randomUUID();
    const [root] = await insertChain(stack, company, 1, "done", ago(200 * DAY_MS));
    const activatedAt = ago(5 * DAY_MS);
    const task = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: root!,
      kind: "task_directory",
      activatedAt,
      deleteAfter: ago(1000),
    });
    const worktree = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: root!,
      activatedAt,
      deleteAfter: ago(1000),
    });
    await sweepRestorePoints(stack, company);
    const kept = await restorePointRow(stack, task);
    expect(kept.status).toBe("active");
    expect(kept.deleteAfter!.getTime()).toBe(activatedAt.getTime() + 90 * DAY_MS);
    expect((await restorePointRow(stack, worktree)).status).not.toBe("active");
  });

  it("is not due while delete_after is in the future or empty", async () => {
    const company = randomUUID();
    const [root] = await insertChain(stack, company, 1, "done", ago(200 * DAY_MS));
    const later = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: root!,
      deleteAfter: new Date(Date.now() + DAY_MS),
    });
    const open = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: root!,
      deleteAfter: null,
    });
    const report = await sweepRestorePoints(stack, company);
    expect(report.checked).toBe(0);
    for (const id of [later, open]) expect((await restorePointRow(stack, id)).status).toBe("active");
  });
});

describe("retention days", () => {
  it("come from PAPERCLIP_GIT_RESTORE_POINT_RETENTION_DAYS, default 90, minimum 1", () => {
    const config = (env: Record<string, string>) =>
      readConfigOf("restore-point-retention", { ...stack.env, ...env }) as unknown as { days: number };
    expect(config({}).days).toBe(90);
    expect(config({ PAPERCLIP_GIT_RESTORE_POINT_RETENTION_DAYS: "1" }).days).toBe(1);
    expect(() => config({ PAPERCLIP_GIT_RESTORE_POINT_RETENTION_DAYS: "0" })).toThrow(
      "PAPERCLIP_GIT_RESTORE_POINT_RETENTION_DAYS: must be at least 1 (got 0)",
    );
  });

  it("a shorter period expires a tree closed two days ago (one-day stack)", async () => {
    const short = await startStack({
      env: { PAPERCLIP_GIT_RESTORE_POINT_RETENTION_DAYS: "1", RECLAIM_RESTORE_POINT_SETTLE_MS: "600000" },
    });
    try {
      const company = randomUUID();
      const [root] = await insertChain(short, company, 1, "done", ago(2 * DAY_MS));
      const id = await insertRestorePoint(short, {
        companyId: company,
        sourceIssueId: root!,
        deleteAfter: ago(1000),
      });
      const report = await sweepRestorePoints(short, company);
      expect(report.entries).toContainEqual(expect.objectContaining({ reason: "tree_closed" }));
      // No hook configured: the no-op hook lets the row go straight on to deletion.
      expect((await restorePointRow(short, id)).status).toBe("delete_requested");
    } finally {
      await short.stop();
    }
  });
});

describe("a pending restore point", () => {
  it("older than one hour was abandoned mid-capture: its object is deleted and the row marked deleted", async () => {
    const company = randomUUID();
    const point = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: randomUUID(),
      status: "pending",
      createdAt: ago(61 * MINUTE_MS),
    });
    const first = await sweepRestorePoints(stack, company);
    expect(first.entries).toContainEqual(expect.objectContaining({ reason: "abandoned_capture" }));
    await sweepRestorePoints(stack, company);
    expect((await restorePointRow(stack, point.id)).status).toBe("deleted");
    expect(await objectState(storage, point.storageKey)).toBe("absent");
  });

  it("within its hour is left alone, and the end of its grace is a deadline", async () => {
    const company = randomUUID();
    const createdAt = ago(20 * MINUTE_MS);
    const id = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: randomUUID(),
      status: "pending",
      createdAt,
    });
    const report = await sweepRestorePoints(stack, company);
    expect(report.checked).toBe(0);
    expect((await restorePointRow(stack, id)).status).toBe("pending");
    expect((await deadlinesOf(stack, company)).get("capture_grace")?.getTime()).toBe(
      createdAt.getTime() + 60 * MINUTE_MS,
    );
  });
});

describe("a superseded or delete_requested restore point", () => {
  it("is due from when it entered that status: one stamped ahead of the worker's clock waits for that time, which is a deadline", async () => {
    const company = randomUUID();
    // Marked by a database whose clock runs ahead of the worker's (the trigger's now()).
    const stampedAt = new Date(Date.now() + 10 * MINUTE_MS);
    const id = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: randomUUID(),
      status: "delete_requested",
      createdAt: stampedAt,
    });
    const report = await sweepRestorePoints(stack, company);
    expect(report.checked).toBe(0);
    expect((await restorePointRow(stack, id)).status).toBe("delete_requested");
    expect((await deadlinesOf(stack, company)).get("retry")?.getTime()).toBe(stampedAt.getTime());
  });
});

describe("the expiry hook", () => {
  it("that fails keeps the row expiring and its object, records the error, and is retried after 15 minutes", async () => {
    const company = randomUUID();
    const [root] = await insertChain(stack, company, 1, "done", ago(100 * DAY_MS));
    const point = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: root!,
      deleteAfter: ago(1000),
    });
    hook.respondWith(503);
    const started = Date.now();
    const report = await sweepRestorePoints(stack, company);
    expect(outcomeOf(report, point.id)).toBe("expiry_hook_failed");
    let row = await restorePointRow(stack, point.id);
    expect(row.status).toBe("expiring");
    expect(row.lastError).toContain("503");
    expect(near(row.retryAt, started + 15 * MINUTE_MS, 30_000)).toBe(true);
    expect((await deadlinesOf(stack, company)).get("retry")).toEqual(row.retryAt);
    expect(await objectState(storage, point.storageKey)).toBe("present");

    // Before the retry time nothing happens to it, and its object is never deleted.
    const calls = hook.calls.length;
    expect((await sweepRestorePoints(stack, company)).checked).toBe(0);
    expect(hook.calls.length).toBe(calls);

    // The retry time has come (backdated): the hook runs again, succeeds, deletion follows.
    hook.respondWith(200);
    await stack.db.executionWorkspaceRestorePoint.update({
      where: { id: point.id },
      data: { retryAt: ago(1000) },
    });
    await sweepRestorePoints(stack, company);
    row = await restorePointRow(stack, point.id);
    expect(row).toMatchObject({ status: "delete_requested", lastError: null, retryAt: null });
    await sweepRestorePoints(stack, company);
    expect((await restorePointRow(stack, point.id)).status).toBe("deleted");
  });
});

describe("dry run", () => {
  it("reports what would expire and be deleted, and changes nothing", async () => {
    const company = randomUUID();
    const [root] = await insertChain(stack, company, 1, "done", ago(100 * DAY_MS));
    const expiring = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: root!,
      deleteAfter: ago(1000),
    });
    const doomed = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: root!,
      status: "superseded",
    });
    const calls = hook.calls.length;
    const report = await sweepRestorePoints(stack, company, { dryRun: true });
    expect(report.dryRun).toBe(true);
    expect(report.candidates).toBe(2);
    expect((await restorePointRow(stack, expiring.id)).status).toBe("active");
    expect((await restorePointRow(stack, doomed.id)).status).toBe("superseded");
    expect(await objectState(storage, doomed.storageKey)).toBe("present");
    expect(hook.calls.length).toBe(calls);
    expect(await deadlinesOf(stack, company)).toEqual(new Map());
  });
});
