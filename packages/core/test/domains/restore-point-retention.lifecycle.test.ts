/**
 * Restore-point retention: when the worker runs. At start-up (including an expiry hook that
 * a restart interrupted), when issue changes settle (the trigger's notification, debounced
 * from the first change), at once for deleted issues and companies, in batches of 50 that
 * continue at once, and never while nothing is due. Real scheduler, worker, PostgreSQL
 * LISTEN/NOTIFY, Redis, local_disk storage; timing is read from the ledger.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { createLogger, type BatchReport } from "@reclaim/core";
import { createLocalDiskProvider, type StorageProvider } from "@reclaim/shared";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  closeIssue,
  DAY_MS,
  deadlinesOf,
  DOMAIN,
  insertChain,
  insertIssue,
  insertRestorePoint,
  objectState,
  restorePointRow,
  startHookServer,
  storedRestorePoint,
  type HookServer,
} from "@reclaim/testkit/src/fixtures/restore-points";

const ago = (ms: number) => new Date(Date.now() - ms);
const storageOf = (instanceRoot: string): StorageProvider =>
  createLocalDiskProvider({ baseDir: path.join(instanceRoot, "data", "storage") });

const reportsOf = (reports: BatchReport[], company: string) => reports.filter((r) => r.companyId === company);

describe("start-up", () => {
  let stack: Stack;
  let hook: HookServer;
  afterEach(async () => {
    await stack?.stop();
    await hook?.close();
  });

  it("reviews what is due, and runs the expiry hook a restart interrupted", async () => {
    hook = await startHookServer();
    const company = randomUUID();
    let due = "";
    let interrupted = "";
    let later = "";
    const laterAt = new Date(Date.now() + 3 * DAY_MS);
    stack = await startStack({
      env: { ...hook.env },
      seed: async (ctx) => {
        const [root] = await insertChain(ctx, company, 2, "done", ago(10 * DAY_MS));
        // Marked by the trigger while no scheduler listened.
        due = await insertRestorePoint(ctx, {
          companyId: company,
          sourceIssueId: root!,
          deleteAfter: ago(60_000),
        });
        // Moved to expiring, then the process died before the hook ran.
        interrupted = await insertRestorePoint(ctx, {
          companyId: company,
          sourceIssueId: root!,
          status: "expiring",
        });
        later = await insertRestorePoint(ctx, {
          companyId: company,
          sourceIssueId: root!,
          deleteAfter: laterAt,
        });
      },
    });
    await stack.waitForReports(DOMAIN, (r) => reportsOf(r, company).length > 0);
    await waitFor(async () => (await restorePointRow(stack, interrupted)).status === "deleted", {
      what: "the interrupted expiry to finish",
    });
    expect(hook.calls.map((c) => c.body.restorePoint.id)).toContain(interrupted);
    const reviewed = await restorePointRow(stack, due);
    expect(reviewed.deleteAfter!.getTime()).toBeGreaterThan(Date.now() + 70 * DAY_MS);
    // The earliest expiry is a deadline; nothing else is scheduled.
    await stack.idle();
    const deadlines = await deadlinesOf(stack, company);
    expect([...deadlines.keys()]).toEqual(["retention"]);
    expect(deadlines.get("retention")!.getTime()).toBe(laterAt.getTime());
    expect((await restorePointRow(stack, later)).deleteAfter!.getTime()).toBe(laterAt.getTime());
  });

  it("schedules nothing when no restore point has work", async () => {
    const company = randomUUID();
    stack = await startStack({
      seed: async (ctx) => {
        const [root] = await insertChain(ctx, company, 1);
        await insertRestorePoint(ctx, { companyId: company, sourceIssueId: root!, deleteAfter: null });
        await insertRestorePoint(ctx, { companyId: company, sourceIssueId: root!, status: "deleted" });
      },
    });
    await stack.idle();
    expect(await stack.db.reclaimDeadline.count({ where: { domain: DOMAIN } })).toBe(0);
    const counts = await stack.scheduler.deps.queues.queue(DOMAIN).getJobCounts("delayed", "waiting");
    expect(counts).toEqual({ delayed: 0, waiting: 0 });
  });
});

describe("wake-ups", () => {
  const SETTLE_MS = 3000;
  let stack: Stack;
  let storage: StorageProvider;
  const lines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    const log = createLogger("info", {}, (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    stack = await startStack({ env: { RECLAIM_RESTORE_POINT_SETTLE_MS: String(SETTLE_MS) }, log });
    storage = storageOf(stack.instanceRoot);
  });
  afterAll(async () => stack?.stop());

  it("an issue change schedules a review one settle window after the first change; later changes never postpone it", async () => {
    const company = randomUUID();
    const [root, a, b] = await insertChain(stack, company, 3);
    const id = await insertRestorePoint(stack, { companyId: company, sourceIssueId: root! });
    const first = Date.now();
    await closeIssue(stack, b!);
    const row = await waitFor(async () => (await deadlinesOf(stack, company)).get("issue_changed"), {
      what: "the issue_changed deadline",
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await closeIssue(stack, a!);
    await closeIssue(stack, root!);
    const merged = (await deadlinesOf(stack, company)).get("issue_changed");
    // Still the first request's time (LEAST): the window started at the first change.
    expect(merged?.getTime()).toBe(row.getTime());
    expect(row.getTime()).toBeGreaterThanOrEqual(first + SETTLE_MS - 100);
    expect(row.getTime()).toBeLessThan(first + SETTLE_MS + 2000);

    const reports = await stack.waitForReports(DOMAIN, (r) =>
      reportsOf(r, company).some((x) => x.checked > 0),
    );
    const review = reportsOf(reports, company).find((x) => x.checked > 0)!;
    expect(Date.parse(review.startedAt)).toBeGreaterThanOrEqual(row.getTime());
    // The whole tree closed: the review set the expiry.
    await waitFor(
      async () => (await restorePointRow(stack, id)).deleteAfter!.getTime() > Date.now() + DAY_MS,
      {
        what: "the expiry",
      },
    );
  });

  it("a review of an open tree leaves nothing scheduled: open trees cost no recurring checks", async () => {
    const company = randomUUID();
    const [root, leaf] = await insertChain(stack, company, 2);
    const id = await insertRestorePoint(stack, { companyId: company, sourceIssueId: root! });
    await closeIssue(stack, leaf!);
    await stack.waitForReports(DOMAIN, (r) => reportsOf(r, company).some((x) => x.checked > 0));
    await stack.idle();
    expect((await restorePointRow(stack, id)).deleteAfter).toBeNull();
    expect(await deadlinesOf(stack, company)).toEqual(new Map());
    expect(await stack.scheduler.deps.queues.queue(DOMAIN).getJob(`${DOMAIN}--${company}`)).toBeUndefined();
  });

  it("an issue.changed event wakes a company with restore points, not one without", async () => {
    const withPoints = randomUUID();
    const without = randomUUID();
    const issue = await insertIssue(stack, { companyId: withPoints });
    await insertRestorePoint(stack, { companyId: withPoints, sourceIssueId: issue });
    const before = Date.now();
    const response = await stack.api("POST", "/v1/events", {
      events: [
        { type: "issue.changed", companyId: withPoints, issueId: issue, status: "done" },
        { type: "issue.changed", companyId: without, issueId: randomUUID(), status: "done" },
      ],
    });
    expect(response.status).toBe(202);
    const due = (await deadlinesOf(stack, withPoints)).get("issue_changed");
    expect(due!.getTime()).toBeGreaterThanOrEqual(before + SETTLE_MS);
    expect(await deadlinesOf(stack, without)).toEqual(new Map());
  });

  it("deleting an issue removes its restore points' objects promptly", async () => {
    const company = randomUUID();
    const [, doomed] = await insertChain(stack, company, 2);
    const point = await storedRestorePoint(stack, storage, { companyId: company, sourceIssueId: doomed! });
    await stack.db.issue.delete({ where: { id: doomed! } });
    expect((await restorePointRow(stack, point.id)).status).toBe("delete_requested");
    await waitFor(async () => (await restorePointRow(stack, point.id)).status === "deleted", {
      what: "the deletion",
      timeoutMs: SETTLE_MS - 500,
    });
    expect(await objectState(storage, point.storageKey)).toBe("absent");
  });

  it("works in batches of 50; a full batch continues at once; each run logs its counts", async () => {
    const company = randomUUID();
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) {
      ids.push(
        await insertRestorePoint(stack, {
          companyId: company,
          sourceIssueId: randomUUID(),
          status: "superseded",
        }),
      );
    }
    await stack.api("POST", "/v1/events", {
      events: [{ type: "issue.deleted", companyId: company, issueId: randomUUID() }],
    });
    const reports = await stack.waitForReports(
      DOMAIN,
      (r) => reportsOf(r, company).reduce((n, x) => n + x.removed, 0) >= 120,
    );
    const mine = reportsOf(reports, company)
      .filter((r) => r.removed > 0)
      .reverse();
    expect(mine.map((r) => r.removed)).toEqual([50, 50, 20]);
    const logged = lines.filter(
      (l) => l.event === "restore_point_retention.batch" && l.companyId === company,
    );
    expect(logged.map((l) => l.deleted)).toEqual([50, 50, 20]);
    const rows = await stack.db.executionWorkspaceRestorePoint.count({
      where: { id: { in: ids }, status: "deleted" },
    });
    expect(rows).toBe(120);
  });

  it("the scheduler listens again after losing its connection, and finds what was marked meanwhile", async () => {
    const listening = async () =>
      (
        await stack.db.$queryRawUnsafe<{ pid: number }[]>(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN reclaim_restore_points'",
        )
      ).map((r) => r.pid);
    const [pid] = await listening();
    expect(pid).toBeDefined();
    await stack.db.$queryRawUnsafe("SELECT pg_terminate_backend($1::int)", pid);
    // Marked while nobody listens: the notification is lost, the row is not.
    const company = randomUUID();
    const [root] = await insertChain(stack, company, 1, "done", ago(3 * DAY_MS));
    const id = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: root!,
      deleteAfter: ago(1000),
    });
    await waitFor(async () => (await listening()).some((p) => p !== pid), {
      what: "a new LISTEN connection",
    });
    await waitFor(
      async () => ((await restorePointRow(stack, id)).deleteAfter?.getTime() ?? 0) > Date.now() + DAY_MS,
      {
        what: "the review found after reconnecting",
      },
    );
  });
});

describe("deleting a company", () => {
  let stack: Stack;
  afterAll(async () => stack?.stop());

  it("marks its restore points delete_requested in the deleting transaction, wakes the worker at once, and their objects are deleted; its issues are not touched", async () => {
    // No worker yet, so the wake-up stays in the ledger to be looked at; no issue-change wake-ups.
    stack = await startStack({ worker: false, env: { RECLAIM_RESTORE_POINT_SETTLE_MS: "600000" } });
    const storage = storageOf(stack.instanceRoot);
    const company = await stack.db.company.create({ data: { name: "leaving" } });
    const [root, leaf] = await insertChain(stack, company.id, 2);
    const points = [
      await storedRestorePoint(stack, storage, { companyId: company.id, sourceIssueId: root! }),
      await storedRestorePoint(stack, storage, { companyId: company.id, sourceIssueId: leaf! }),
    ];
    const otherCompany = await storedRestorePoint(stack, storage, {
      companyId: randomUUID(),
      sourceIssueId: root!,
    });
    const statuses = () => Promise.all(points.map(async (p) => (await restorePointRow(stack, p.id)).status));

    const paperclip = new pg.Client({ connectionString: stack.database.url });
    await paperclip.connect();
    try {
      await paperclip.query("BEGIN");
      await paperclip.query("DELETE FROM companies WHERE id = $1", [company.id]);
      const inside = await paperclip.query<{ status: string }>(
        "SELECT status FROM execution_workspace_restore_points WHERE id = ANY($1::uuid[])",
        [points.map((p) => p.id)],
      );
      expect(inside.rows.map((r) => r.status)).toEqual(["delete_requested", "delete_requested"]);
      expect(await statuses()).toEqual(["active", "active"]); // not committed yet
      await paperclip.query("COMMIT");
    } finally {
      await paperclip.end();
    }
    const committedAt = Date.now();

    const wake = await waitFor(async () => (await deadlinesOf(stack, company.id)).get("company_deleted"), {
      what: "the company_deleted wake-up",
    });
    expect(wake.getTime()).toBeLessThanOrEqual(Date.now()); // due at once, not after a settle window
    expect(wake.getTime()).toBeGreaterThan(committedAt - 5000);
    expect(await stack.db.issue.count({ where: { companyId: company.id } })).toBe(2);

    await stack.startWorker();
    for (const point of points) {
      await waitFor(async () => (await restorePointRow(stack, point.id)).status === "deleted", {
        what: "the deletion",
        timeoutMs: 10_000,
      });
      expect(await objectState(storage, point.storageKey)).toBe("absent");
    }
    expect((await restorePointRow(stack, otherCompany.id)).status).toBe("active");
    expect(await objectState(storage, otherCompany.storageKey)).toBe("present");
  });
});
