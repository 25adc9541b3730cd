/**
 * Isolated task directories: when the reaper looks (spec "Orphaned task directories"). The
 * walk of `isolated-workspaces/` at every server start (a real restart of scheduler and
 * worker), 8 directories per batch; after it only what changes point to (a workspace row
 * archived, an issue closed: its directory and its ancestors'); a kept directory again at
 * its own deadline (end of the terminal delay or orphan grace, an hour later for a busy lock
 * or a live consumer); nothing registered with nothing pending; the walk's leftover pass
 * (`.expired-*` / `.restoring-*` older than an hour) and its retry when an orphan's trash
 * could not be deleted. Real scheduler, worker, PostgreSQL, Redis and directories; a
 * deadline far ahead is run by the real job runner with a clock set to it.
 */
import { randomUUID } from "node:crypto";
import { lstat, mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import { createDb, silentLogger, toBatchReport, type BatchReport, type Db } from "@reclaim/core";
import { createScheduler, type SchedulerService } from "@reclaim/scheduler/src/service";
import {
  createTestDatabase,
  deleteKeys,
  stackEnv,
  startStack,
  sweepDomain,
  tempDir,
  uniquePrefix,
  waitFor,
  type Stack,
} from "@reclaim/testkit";
import {
  age,
  closeEvent,
  exists,
  issueDirectory,
  removed,
  runAt,
  task,
  TASK_ENV,
  type Task,
} from "@reclaim/testkit/src/fixtures/task-directories";
import { createWorkerService, type WorkerService } from "@reclaim/worker/src/service";
import { setDeletable } from "./native-session-backups.fixtures";

const DOMAIN = "task-directories";
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const entryOf = (t: { company: string; issue: string }) => `isolated-workspaces/${t.company}/${t.issue}`;

async function reportsOf(db: Db): Promise<BatchReport[]> {
  const rows = await db.reclaimBatchReport.findMany({
    where: { domain: DOMAIN },
    orderBy: { startedAt: "asc" },
  });
  return rows.map((r) => toBatchReport(r, true));
}

/** How many times each directory was judged (its entries in company reports). */
async function judgedCounts(db: Db, dirs: { company: string; issue: string }[]): Promise<number[]> {
  const entries = (await reportsOf(db)).flatMap((r) => r.entries ?? []);
  return dirs.map((d) => entries.filter((e) => e.id === entryOf(d)).length);
}

/** Nothing of this domain is scheduled: no ledger row, no due item, no queued job. */
async function nothingScheduled(db: Db, scheduler: SchedulerService): Promise<boolean> {
  const deadlines = await db.reclaimDeadline.count({ where: { domain: DOMAIN } });
  const items = await db.reclaimItemDeadline.count({ where: { domain: DOMAIN, dueAt: { not: null } } });
  const jobs = await scheduler.deps.queues
    .queue(DOMAIN)
    .getJobCounts("delayed", "waiting", "active", "prioritized");
  return deadlines + items + Object.values(jobs).reduce((a, b) => a + b, 0) === 0;
}

describe("the walk at every server start, then only what changes point to", () => {
  it("walks every directory at each start (8 per batch, a restart mid-walk starts over), then looks only where changes point, and registers nothing with nothing pending", async () => {
    const database = await createTestDatabase();
    const db = createDb(database.url);
    const prefix = uniquePrefix();
    const root = await tempDir("reclaim-walk-");
    const env = stackEnv(database, prefix, root.path, TASK_ENV);
    const at = { db, instanceRoot: root.path };
    let scheduler: SchedulerService | null = null;
    let worker: WorkerService | null = null;
    const start = async () => {
      // The scheduler's start-up duties first (the walk requested), then the worker.
      scheduler = await createScheduler({ env, log: silentLogger });
      await scheduler.started;
      worker = createWorkerService({ env, log: silentLogger });
      await worker.start();
    };
    const stop = async () => {
      await worker?.stop();
      await scheduler?.stop();
      worker = scheduler = null;
    };
    try {
      const company = randomUUID();
      // P (closed long ago) works in its task directory; its child C is open, in a directory
      // no row points at. Q is open; its child D works in a task directory. Six more open issues.
      const parent = await task(at, { companyId: company });
      const child = await issueDirectory(at, { companyId: company, issue: "open", parentId: parent.issue });
      const q = await issueDirectory(at, { companyId: company, issue: "open" });
      const d = await task(at, { companyId: company, status: "in_progress", parentId: q.issue });
      const others = [];
      for (let i = 0; i < 6; i++)
        others.push(await issueDirectory(at, { companyId: company, issue: "open" }));
      const all = [parent, child, q, d, ...others];
      const walked = async (times: number) => {
        let counts: number[] = [];
        await waitFor(
          async () => {
            counts = await judgedCounts(db, all);
            return counts.every((n) => n >= times);
          },
          { what: `every directory judged ${times} time(s)`, timeoutMs: 60_000 },
        ).catch((error: Error) => {
          throw new Error(`${error.message}: ${counts.join(",")}`);
        });
        expect(counts).toEqual(all.map(() => times));
        await waitFor(async () => nothingScheduled(db, scheduler!), { what: "nothing scheduled" });
      };

      await start();
      await walked(1);
      const walks = (await reportsOf(db)).filter((r) => r.companyId === null && r.checked > 0);
      expect(walks.map((r) => r.checked)).toEqual([8, 2]);
      const reasons = (await reportsOf(db)).flatMap((r) => (r.entries ?? []).map((e) => e.reason));
      expect(new Set(reasons)).toEqual(new Set(["issue_open"]));

      // A real restart walks everything again.
      await stop();
      await start();
      await walked(2);

      // Stopped between two batches of a walk (its cursor after the first 8, its continuation
      // due): the next start walks every directory again, not only the rest.
      await stop();
      const sorted = all.map((x) => `${x.company}/${x.issue}`).sort();
      await db.reclaimCursor.create({
        data: {
          domain: DOMAIN,
          companyId: "instance",
          name: "walk",
          value: sorted[7]!,
          updatedAt: new Date(),
        },
      });
      await db.reclaimDeadline.create({
        data: { domain: DOMAIN, companyId: "instance", reason: "continue", dueAt: new Date() },
      });
      await start();
      await walked(3);

      // C closes: its directory and its parent's are looked at, nothing else. P's tree is now
      // closed: saved and removed. C's directory waits for the orphan grace (its own deadline).
      const closedAt = new Date();
      await db.issue.update({ where: { id: child.issue }, data: { status: "done", completedAt: closedAt } });
      await scheduler!.app.inject({
        method: "POST",
        url: "/v1/events",
        headers: { authorization: `Bearer ${env.RECLAIM_API_TOKEN}` },
        payload: {
          events: [{ type: "issue.changed", companyId: company, issueId: child.issue, status: "done" }],
        },
      });
      await removed(at, parent);
      const grace = await waitFor(
        () =>
          db.reclaimItemDeadline.findFirst({
            where: { itemId: `dir:${child.issue}`, reason: "orphan_grace" },
          }),
        { what: "C kept for its grace" },
      );
      expect(grace.dueAt).toEqual(new Date(closedAt.getTime() + 7 * DAY));
      expect(await exists(path.join(child.dir, "notes.txt"))).toBe(true);

      // D's row is archived by hand: D's directory and Q's are looked at, nothing else.
      await db.executionWorkspace.update({
        where: { id: d.workspace },
        data: { status: "archived", closedAt: new Date() },
      });
      await scheduler!.app.inject({
        method: "POST",
        url: "/v1/events",
        headers: { authorization: `Bearer ${env.RECLAIM_API_TOKEN}` },
        payload: {
          events: [
            { type: "workspace.changed", companyId: company, workspaceId: d.workspace, status: "archived" },
          ],
        },
      });
      await waitFor(async () => (await judgedCounts(db, [q]))[0] === 4, { what: "Q's directory looked at" });
      // What is left scheduled is C's grace, in the ledger and the queue.
      await waitFor(
        async () => {
          const ledger = await db.reclaimDeadline.findMany({ where: { domain: DOMAIN } });
          const jobs = await scheduler!.deps.queues
            .queue(DOMAIN)
            .getJobCounts("waiting", "active", "prioritized");
          return (
            Object.values(jobs).every((n) => n === 0) &&
            ledger.length === 1 &&
            ledger[0]!.companyId === company &&
            ledger[0]!.dueAt.getTime() === grace.dueAt!.getTime()
          );
        },
        { what: "only C's grace scheduled" },
      );
      expect(await judgedCounts(db, [q, d, ...others])).toEqual([4, 4, 3, 3, 3, 3, 3, 3]);
      // At that deadline C's directory goes (its contents are older than the grace too).
      const later = await runAt({ ...at, scheduler: scheduler! }, company, grace.dueAt!);
      expect(later.entries).toContainEqual(
        expect.objectContaining({ id: entryOf(child), outcome: "removed" }),
      );
      expect(await exists(child.dir)).toBe(false);
    } finally {
      await stop();
      await db.$disconnect();
      await deleteKeys(prefix);
      await database.drop();
      await root.remove();
    }
  }, 240_000);
});

describe("a kept directory is checked again at its own deadline", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { ...TASK_ENV, PAPERCLIP_GIT_RESTORE_POINT_TERMINAL_DELAY_DAYS: "3" } });
  });
  afterAll(async () => stack?.stop());

  const deps = () => ({ db: stack.db, scheduler: stack.scheduler, instanceRoot: stack.instanceRoot });

  /** The directory's skip entry, its item's deadline and the company's ledger deadline. */
  async function keptWith(t: { company: string; issue: string }, item: string, reason: string) {
    const reports = await stack.waitForReports(DOMAIN, (rs) =>
      rs.some((r) => (r.entries ?? []).some((e) => e.id === entryOf(t) && e.reason === reason)),
    );
    const report = reports.find((r) => (r.entries ?? []).some((e) => e.id === entryOf(t)))!;
    await stack.idle();
    const row = await stack.db.reclaimItemDeadline.findUniqueOrThrow({
      where: { domain_itemId: { domain: DOMAIN, itemId: item } },
    });
    const ledger = await stack.db.reclaimDeadline.findMany({
      where: { domain: DOMAIN, companyId: t.company },
    });
    return { report, dueAt: row.dueAt!, ledger: ledger.map((l) => l.dueAt.getTime()) };
  }

  async function removedAt(t: { company: string; issue: string; dir: string }, when: Date) {
    const report = await runAt(deps(), t.company, when);
    expect(report.entries).toContainEqual(expect.objectContaining({ id: entryOf(t), outcome: "removed" }));
    expect(await exists(t.dir)).toBe(false);
  }

  it("the end of the terminal delay", async () => {
    const t = await task(stack, { closedDaysAgo: 1 });
    const { completedAt } = await stack.db.issue.findUniqueOrThrow({ where: { id: t.issue } });
    await closeEvent(stack, t);
    const kept = await keptWith(t, `ws:${t.workspace}`, "terminal_delay");
    const end = completedAt!.getTime() + 3 * DAY;
    expect([kept.dueAt.getTime(), kept.ledger]).toEqual([end, [end]]);
    await removedAt(t, new Date(end));
  });

  it("the end of the orphan grace, or of the grace after its newest change", async () => {
    const closed = await issueDirectory(stack, { closedDaysAgo: 2 });
    const changed = await issueDirectory(stack, { companyId: closed.company, closedDaysAgo: 10 });
    const { completedAt } = await stack.db.issue.findUniqueOrThrow({ where: { id: closed.issue } });
    await writeFile(path.join(changed.dir, "late.txt"), "written a day ago\n");
    await age(changed.dir, 1);
    const touched = (await lstat(path.join(changed.dir, "late.txt"))).mtimeMs;
    await stack.api("POST", "/v1/events", {
      events: [closed, changed].map((o) => ({
        type: "issue.changed",
        companyId: o.company,
        issueId: o.issue,
        status: "done",
      })),
    });
    const a = await keptWith(closed, `dir:${closed.issue}`, "orphan_grace");
    const b = await keptWith(changed, `dir:${changed.issue}`, "recently_changed");
    expect(a.dueAt.getTime()).toBe(completedAt!.getTime() + 7 * DAY);
    expect(b.dueAt.getTime()).toBe(Math.ceil(touched + 7 * DAY));
    expect(a.dueAt < b.dueAt).toBe(true);
    expect(a.ledger).toEqual([a.dueAt.getTime()]);
    await removedAt(closed, a.dueAt);
    // The later directory keeps its own deadline.
    const ledger = await stack.db.reclaimDeadline.findMany({
      where: { domain: DOMAIN, companyId: closed.company },
    });
    expect(ledger.map((l) => l.dueAt.getTime())).toEqual([b.dueAt.getTime()]);
    expect(await exists(path.join(changed.dir, "late.txt"))).toBe(true);
    await removedAt(changed, b.dueAt);
  });

  it("an hour later while a live run uses it", async () => {
    const t = await task(stack);
    const run = await stack.db.heartbeatRun.create({
      data: { companyId: t.company, status: "running", contextSnapshot: { issueId: t.issue } },
    });
    await closeEvent(stack, t);
    const kept = await keptWith(t, `ws:${t.workspace}`, "live_or_unresolved_consumer");
    const hour = new Date(kept.report.startedAt).getTime() + HOUR;
    expect([kept.dueAt.getTime(), kept.ledger]).toEqual([hour, [hour]]);
    await stack.db.heartbeatRun.update({
      where: { id: run.id },
      data: { status: "succeeded", finishedAt: new Date() },
    });
    await removedAt(t, new Date(hour));
  });

  it.each([
    [
      "the workspace lifecycle lock",
      "SELECT pg_advisory_xact_lock(hashtextextended('execution_workspace_lifecycle:' || $1::text, 0))",
      (t: Task) => t.workspace,
    ],
    ["the issue's source lock", "SELECT id FROM issues WHERE id = $1::uuid FOR UPDATE", (t: Task) => t.issue],
  ])("an hour later when %s was busy", async (_lock, sql, id) => {
    const t = await task(stack);
    const paperclip = new pg.Client({ connectionString: stack.database.url });
    await paperclip.connect();
    try {
      await paperclip.query("BEGIN");
      await paperclip.query(sql, [id(t)]);
      await closeEvent(stack, t);
      const kept = await keptWith(t, `ws:${t.workspace}`, "lock_busy");
      const hour = new Date(kept.report.startedAt).getTime() + HOUR;
      expect([kept.dueAt.getTime(), kept.ledger]).toEqual([hour, [hour]]);
      const rps = await stack.db.executionWorkspaceRestorePoint.findMany({
        where: { executionWorkspaceId: t.workspace },
      });
      expect(rps).toHaveLength(1);
      expect(["delete_requested", "deleted"]).toContain(rps[0]!.status);
      await paperclip.query("COMMIT");
      await removedAt(t, new Date(hour));
    } finally {
      await paperclip.end();
    }
  });

  it("an open issue waits for its close: nothing is scheduled", async () => {
    const t = await task(stack, { status: "in_progress" });
    await stack.api("POST", "/v1/events", {
      events: [{ type: "workspace.changed", companyId: t.company, workspaceId: t.workspace }],
    });
    await stack.waitForReports(DOMAIN, (rs) =>
      rs.some((r) => (r.entries ?? []).some((e) => e.id === entryOf(t) && e.reason === "issue_open")),
    );
    await stack.idle();
    const item = await stack.db.reclaimItemDeadline.findUniqueOrThrow({
      where: { domain_itemId: { domain: DOMAIN, itemId: `ws:${t.workspace}` } },
    });
    expect(item.dueAt).toBeNull();
    expect(await stack.db.reclaimDeadline.count({ where: { domain: DOMAIN, companyId: t.company } })).toBe(0);
  });
});

describe("leftovers of the walk", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: TASK_ENV });
  });
  afterAll(async () => stack?.stop());

  const deps = () => ({ db: stack.db, scheduler: stack.scheduler, instanceRoot: stack.instanceRoot });
  const hex = () => randomUUID().replaceAll("-", "").slice(0, 24);

  async function leftover(company: string, prefix: ".expired" | ".restoring", hoursOld: number) {
    const dir = path.join(stack.instanceRoot, "isolated-workspaces", company, `${prefix}-${hex()}`);
    await mkdir(path.join(dir, "inside"), { recursive: true });
    await writeFile(path.join(dir, "inside", "file.txt"), "left over\n");
    await age(dir, hoursOld / 24);
    return dir;
  }

  it("deletes .expired-* and .restoring-* directories older than an hour, keeps younger ones, and comes back when they are an hour old", async () => {
    const company = randomUUID();
    const old = [await leftover(company, ".expired", 2), await leftover(company, ".restoring", 2)];
    const young = [await leftover(company, ".expired", 0.5), await leftover(company, ".restoring", 0.25)];
    const report = await sweepDomain(stack, DOMAIN, null);
    for (const dir of old) {
      expect(await exists(dir)).toBe(false);
      expect(report.entries).toContainEqual(
        expect.objectContaining({
          id: path.relative(stack.instanceRoot, dir),
          outcome: "removed",
          reason: "interrupted_deletion",
        }),
      );
    }
    for (const dir of young) expect(await exists(path.join(dir, "inside", "file.txt"))).toBe(true);
    // The younger ones are looked at again when the first of them is an hour old.
    const changed = await Promise.all(young.map(async (d) => Math.ceil((await lstat(d)).mtimeMs)));
    const due = await stack.db.reclaimDeadline.findFirstOrThrow({
      where: { domain: DOMAIN, companyId: "instance", reason: "leftovers" },
    });
    expect(due.dueAt.getTime()).toBe(Math.min(...changed) + HOUR);
    await runAt(deps(), "instance", due.dueAt);
    expect(await exists(young[0]!)).toBe(false);
    expect(await exists(young[1]!)).toBe(true);
    const next = await stack.db.reclaimDeadline.findFirstOrThrow({
      where: { domain: DOMAIN, companyId: "instance", reason: "leftovers" },
    });
    expect(next.dueAt.getTime()).toBe(changed[1]! + HOUR);
    await runAt(deps(), "instance", next.dueAt);
    expect(await exists(young[1]!)).toBe(false);
  });

  it("when an orphan's trash cannot be deleted, the walk comes back an hour later and deletes it", async () => {
    const o = await issueDirectory(stack, { issue: "gone" });
    await writeFile(path.join(o.dir, "other.txt"), "deleted before the failure\n");
    await age(o.dir, 10);
    await setDeletable(path.join(o.dir, "notes.txt"), false);
    const companyDir = path.dirname(o.dir);
    let trash: string[] = [];
    try {
      await stack.api("POST", "/v1/events", {
        events: [{ type: "issue.deleted", companyId: o.company, issueId: o.issue }],
      });
      const reports = await stack.waitForReports(DOMAIN, (rs) =>
        rs.some((r) => (r.entries ?? []).some((e) => e.id === entryOf(o) && e.outcome === "failed")),
      );
      const failed = reports.find((r) => (r.entries ?? []).some((e) => e.id === entryOf(o)))!;
      expect(failed.entries).toContainEqual(
        expect.objectContaining({ id: entryOf(o), outcome: "failed", reason: "delete_failed" }),
      );
      trash = (await readdir(companyDir)).filter((n) => n.startsWith(".expired-"));
      expect([await exists(o.dir), trash.length]).toEqual([false, 1]);
      await stack.idle();
      const retry = await stack.db.reclaimDeadline.findFirstOrThrow({
        where: { domain: DOMAIN, companyId: "instance", reason: "leftovers" },
      });
      expect(retry.dueAt.getTime()).toBeGreaterThanOrEqual(new Date(failed.startedAt).getTime() + HOUR);
      expect(retry.dueAt.getTime()).toBeLessThan(new Date(failed.finishedAt).getTime() + HOUR + 1000);

      // Still undeletable then: tried, and tried again an hour later.
      const second = await runAt(deps(), "instance", retry.dueAt);
      expect(second.entries).toContainEqual(
        expect.objectContaining({
          id: path.relative(stack.instanceRoot, path.join(companyDir, trash[0]!)),
          outcome: "failed",
          reason: "leftover_delete_failed",
        }),
      );
      const again = await stack.db.reclaimDeadline.findFirstOrThrow({
        where: { domain: DOMAIN, companyId: "instance", reason: "leftovers" },
      });
      expect(again.dueAt.getTime()).toBe(retry.dueAt.getTime() + HOUR);

      await setDeletable(path.join(companyDir, trash[0]!, "notes.txt"), true);
      const third = await runAt(deps(), "instance", again.dueAt);
      expect(third.removed).toBe(1);
      expect(await readdir(companyDir)).toEqual([]);
    } finally {
      for (const name of trash) {
        await setDeletable(path.join(companyDir, name, "notes.txt"), true).catch(() => undefined);
      }
    }
  });
});
