/**
 * Paperclip's execution-workspace facts, locks and transitions (packages/core/src/workspaces),
 * on a real PostgreSQL database: the issue tree and the issues that use a workspace, the
 * latest close, each live or unresolved consumer, the two locks as the Paperclip server takes
 * them, archive and reactivate with the lifecycle generation, activity rows.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import {
  archiveWorkspace,
  consumersOf,
  createDb,
  lifecycleGeneration,
  lockIssueSource,
  reactivateWorkspace,
  recordWorkspaceActivity,
  subjectFacts,
  tryLockIssueSource,
  tryLockWorkspaceLifecycle,
  waitsForReopenConsumption,
  workspaceRows,
  type Db,
} from "@reclaim/core";
import { createTestDatabase, type TestDatabase } from "@reclaim/testkit";

let database: TestDatabase;
let db: Db;
let other: pg.Client;
const company = randomUUID();
const now = new Date("2026-12-05T12:00:00Z");
const daysAgo = (n: number) => new Date(now.getTime() - n * 86_400_000);

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { max: 4 });
  other = new pg.Client({ connectionString: database.url });
  await other.connect();
});
afterAll(async () => {
  await other?.end();
  await db?.$disconnect();
  await database?.drop();
});

async function issue(
  fields: {
    parentId?: string;
    status?: string;
    closedAt?: Date;
    workspaceId?: string;
    settings?: object;
  } = {},
) {
  const id = randomUUID();
  const status = fields.status ?? "todo";
  await db.issue.create({
    data: {
      id,
      companyId: company,
      parentId: fields.parentId ?? null,
      status,
      completedAt: status === "done" ? (fields.closedAt ?? daysAgo(10)) : null,
      cancelledAt: status === "cancelled" ? (fields.closedAt ?? daysAgo(10)) : null,
      executionWorkspaceId: fields.workspaceId ?? null,
      executionWorkspaceSettings: fields.settings ?? undefined,
    },
  });
  return id;
}

async function workspace(sourceIssueId: string, metadata: object = {}) {
  const id = randomUUID();
  await db.executionWorkspace.create({
    data: {
      id,
      companyId: company,
      sourceIssueId,
      mode: "isolated_workspace",
      strategyType: "project_primary",
      metadata,
    },
  });
  await db.issue.update({ where: { id: sourceIssueId }, data: { executionWorkspaceId: id } });
  return id;
}

const facts = async (root: string, ws: string[]) =>
  (await subjectFacts(db, company, [{ key: "k", rootIssueId: root, workspaceIds: ws }], now)).get("k")!;

describe("the issue tree of a workspace", () => {
  it("counts the latest close over the whole tree, and over the issues that use the workspace", async () => {
    const root = await issue({ status: "done", closedAt: daysAgo(9) });
    const ws = await workspace(root);
    await issue({ parentId: root, status: "done", closedAt: daysAgo(5), workspaceId: ws });
    const ownWorkspaceChild = await issue({ parentId: root, status: "done", closedAt: daysAgo(2) });
    await issue({
      parentId: ownWorkspaceChild,
      status: "cancelled",
      closedAt: daysAgo(3),
      settings: { pendingExistingWorkspaceId: ws },
    });
    const f = await facts(root, [ws]);
    expect(f).toMatchObject({ root_exists: true, root_bound: true, tree_open: false, users_open: false });
    expect(f.tree_latest_close).toEqual(daysAgo(2));
    // The child in its own workspace does not count; its child selecting this one does.
    expect(f.users_latest_close).toEqual(daysAgo(3));
  });

  it("an open descendant in another workspace keeps the tree open but not the workspace's users", async () => {
    const root = await issue({ status: "done" });
    const ws = await workspace(root);
    await issue({ parentId: root, status: "in_progress" });
    const f = await facts(root, [ws]);
    expect([f.tree_open, f.users_open]).toEqual([true, false]);
  });

  it("a source issue bound elsewhere is not bound; a missing one does not exist", async () => {
    const root = await issue({ status: "done" });
    const ws = await workspace(root);
    await db.issue.update({ where: { id: root }, data: { executionWorkspaceId: randomUUID() } });
    expect((await facts(root, [ws])).root_bound).toBe(false);
    expect((await facts(randomUUID(), [ws])).root_exists).toBe(false);
  });
});

describe("live or unresolved consumers", () => {
  async function closedTree() {
    const root = await issue({ status: "done" });
    const child = await issue({ parentId: root, status: "done" });
    return { root, child, ws: await workspace(root) };
  }
  const consumers = async (root: string, ws: string) => consumersOf(await facts(root, [ws]), [], now);

  it("none for a settled tree", async () => {
    const { root, ws } = await closedTree();
    await db.heartbeatRun.create({
      data: {
        companyId: company,
        status: "succeeded",
        finishedAt: daysAgo(1),
        contextSnapshot: { issueId: root },
      },
    });
    expect(await consumers(root, ws)).toEqual([]);
  });

  it.each([
    [
      "a queued run of a descendant",
      "live_run",
      async (t: { child: string }) => {
        await db.heartbeatRun.create({
          data: { companyId: company, status: "queued", contextSnapshot: { issueId: t.child } },
        });
      },
    ],
    [
      "a finished-status run without finished_at",
      "live_run",
      async (t: { root: string }) => {
        await db.heartbeatRun.create({
          data: { companyId: company, status: "failed", contextSnapshot: { issueId: t.root } },
        });
      },
    ],
    [
      "the issue's execution run",
      "live_run",
      async (t: { child: string }) => {
        const run = await db.heartbeatRun.create({ data: { companyId: company, status: "running" } });
        await db.issue.update({ where: { id: t.child }, data: { executionRunId: run.id } });
      },
    ],
    [
      "an unsettled finalization",
      "unsettled_finalization",
      async (t: { root: string }) => {
        await db.nativeRunFinalization.create({
          data: { runId: randomUUID(), companyId: company, issueId: t.root, phase: "committing" },
        });
      },
    ],
    [
      "an active lease of the workspace",
      "live_lease",
      async (t: { ws: string }) => {
        await db.environmentLease.create({
          data: { companyId: company, executionWorkspaceId: t.ws, status: "active" },
        });
      },
    ],
    [
      "a retained lease of a run of the tree",
      "live_lease",
      async (t: { child: string }) => {
        const run = await db.heartbeatRun.create({
          data: {
            companyId: company,
            status: "succeeded",
            finishedAt: daysAgo(1),
            contextSnapshot: { issueId: t.child },
          },
        });
        await db.environmentLease.create({
          data: { companyId: company, heartbeatRunId: run.id, status: "retained" },
        });
      },
    ],
    [
      "an unexpired runtime lease",
      "live_lease",
      async (t: { ws: string }) => {
        await db.executionWorkspaceRuntimeLease.create({
          data: {
            companyId: company,
            executionWorkspaceId: t.ws,
            expiresAt: new Date(now.getTime() + 60_000),
          },
        });
      },
    ],
    [
      "a running runtime service of an issue",
      "live_service",
      async (t: { child: string }) => {
        await db.workspaceRuntimeService.create({
          data: { id: randomUUID(), companyId: company, issueId: t.child, status: "running" },
        });
      },
    ],
    [
      "an escalated recovery action",
      "open_recovery",
      async (t: { child: string }) => {
        await db.issueRecoveryAction.create({
          data: { companyId: company, sourceIssueId: t.child, status: "escalated" },
        });
      },
    ],
  ])("%s keeps it (%s)", async (_label, consumer, add) => {
    const t = await closedTree();
    await add(t);
    expect(await consumers(t.root, t.ws)).toEqual([consumer]);
  });

  it("released leases, expired runtime leases and stopped services do not", async () => {
    const t = await closedTree();
    await db.environmentLease.create({
      data: { companyId: company, executionWorkspaceId: t.ws, status: "released" },
    });
    await db.executionWorkspaceRuntimeLease.create({
      data: { companyId: company, executionWorkspaceId: t.ws, expiresAt: daysAgo(1) },
    });
    await db.workspaceRuntimeService.create({
      data: { id: randomUUID(), companyId: company, executionWorkspaceId: t.ws, status: "stopped" },
    });
    expect(await consumers(t.root, t.ws)).toEqual([]);
  });

  it("a reopen waiting to be consumed keeps it until Paperclip's grace has passed", () => {
    const fresh = {
      reopenPendingConsumption: true,
      reopenPendingConsumptionSince: new Date(now.getTime() - 60_000).toISOString(),
    };
    const stranded = {
      reopenPendingConsumption: true,
      reopenPendingConsumptionSince: daysAgo(1).toISOString(),
    };
    expect(waitsForReopenConsumption(fresh, now)).toBe(true);
    expect(waitsForReopenConsumption(stranded, now)).toBe(false);
  });
});

describe("the locks, as the Paperclip server takes them", () => {
  it("the workspace lifecycle lock is Paperclip's hashtextextended key", async () => {
    const ws = randomUUID();
    await other.query("BEGIN");
    await other.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
      `execution_workspace_lifecycle:${ws}`,
    ]);
    try {
      expect(await db.$transaction((tx) => tryLockWorkspaceLifecycle(tx, ws))).toBe(false);
    } finally {
      await other.query("ROLLBACK");
    }
    expect(await db.$transaction((tx) => tryLockWorkspaceLifecycle(tx, ws))).toBe(true);
  });

  it("the issue's source lock is the issue's row lock: busy while Paperclip updates the issue", async () => {
    const id = await issue({ status: "done" });
    await other.query("BEGIN");
    await other.query(`UPDATE issues SET status = 'todo' WHERE id = $1`, [id]);
    try {
      expect(await db.$transaction((tx) => tryLockIssueSource(tx, company, id))).toBe("busy");
    } finally {
      await other.query("ROLLBACK");
    }
    expect(await db.$transaction((tx) => tryLockIssueSource(tx, company, id))).toBe("locked");
    expect(await db.$transaction((tx) => tryLockIssueSource(tx, company, randomUUID()))).toBe("missing");
    expect(await db.$transaction((tx) => lockIssueSource(tx, company, id))).toBe(true);
  });
});

describe("archive and reactivate, as Paperclip's reaper and reopen write them", () => {
  it("archive raises the lifecycle generation, records the reason and merges metadata; reactivate raises it again", async () => {
    const ws = await workspace(await issue({ status: "done" }), { lifecycleGeneration: 4, keep: 1 });
    const archived = await db.$transaction((tx) =>
      archiveWorkspace(tx, {
        companyId: company,
        workspaceId: ws,
        now,
        cleanupReason: "issue_terminal",
        metadata: { state: "x" },
      }),
    );
    expect(archived).toMatchObject({ lifecycleGeneration: 5, keep: 1, state: "x" });
    const row = (await workspaceRows(db, company, [ws])).get(ws)!;
    expect([row.status, row.closed_at]).toEqual(["archived", now]);
    // Archiving twice does nothing: the row is no longer open.
    expect(
      await db.$transaction((tx) =>
        archiveWorkspace(tx, { companyId: company, workspaceId: ws, now, cleanupReason: "r", metadata: {} }),
      ),
    ).toBeNull();
    const active = await db.$transaction((tx) =>
      reactivateWorkspace(tx, {
        companyId: company,
        workspaceId: ws,
        now,
        removeKeys: ["state"],
        reopenPending: true,
      }),
    );
    expect(active).toMatchObject({
      lifecycleGeneration: 6,
      keep: 1,
      reopenPendingConsumption: true,
      reopenPendingConsumptionSince: now.toISOString(),
    });
    expect(active).not.toHaveProperty("state");
    expect(lifecycleGeneration(active)).toBe(6);
    expect((await workspaceRows(db, company, [ws])).get(ws)).toMatchObject({
      status: "active",
      closed_at: null,
    });
  });

  it("a workspace waiting for a reopen to be consumed is not archived", async () => {
    const ws = await workspace(await issue(), { reopenPendingConsumption: true });
    expect(
      await db.$transaction((tx) =>
        archiveWorkspace(tx, { companyId: company, workspaceId: ws, now, cleanupReason: "r", metadata: {} }),
      ),
    ).toBeNull();
  });

  it("activity rows are Paperclip's: system actor, execution_workspace entity", async () => {
    const ws = randomUUID();
    await recordWorkspaceActivity(db, {
      companyId: company,
      workspaceId: ws,
      action: "execution_workspace.task_directory_archived",
      details: { a: 1 },
      at: now,
    });
    const rows = await db.activityLog.findMany({ where: { entityId: ws } });
    expect(rows).toEqual([
      expect.objectContaining({
        actorType: "system",
        actorId: "reclaim",
        entityType: "execution_workspace",
        action: "execution_workspace.task_directory_archived",
        details: { a: 1 },
      }),
    ]);
  });
});
