/**
 * POST /v1/events: a domain's handler gets all the events of its type in a request at once, so
 * a request costs the same statements for a few events as for many (no N+1), and records what
 * the same events would record one request each (liveness reports too: the newest is kept). Over the domains that read PostgreSQL for
 * their events (git cache expiration, task directories, restore-point retention) and the real
 * route, in its transaction; the queue sync that follows a request is left out (Redis). And
 * the statements read what they were asked about by key, under every plan PostgreSQL can
 * choose for them (sent unnamed by Prisma: planned with their values), never whole tables.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import {
  createDb,
  DeadlineQueues,
  domainRegistry,
  readDomainConfigs,
  silentLogger,
  poolOf,
  sqlFile,
  type Db,
  type ReclaimEvent,
} from "@reclaim/core";
import {
  countStatements,
  createTestDatabase,
  readsUnderEveryPlan,
  type TestDatabase,
} from "@reclaim/testkit";
import { insertIssue } from "@reclaim/testkit/src/fixtures/git-workspaces";
import { insertRestorePoint } from "@reclaim/testkit/src/fixtures/restore-points";
import { TASK_ENV } from "@reclaim/testkit/src/fixtures/task-directories";
import type { ApiDeps } from "../src/deps";
import { eventsRoute } from "../src/routes/events";

const NOW = new Date("2026-12-06T08:00:00.000Z");

// Counting from the start: the pool's connections keep the query method they were made with.
const counter = countStatements();
let database: TestDatabase;
let db: Db;
let deps: ApiDeps;
/** Per company: a closed tree (root, child), a git worktree workspace of each, an ended run. */
const trees: { companyId: string; root: string; child: string; workspaces: string[]; runId: string }[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
  const env = { ...TASK_ENV, PAPERCLIP_GIT_CACHE_EXPIRATION_ENABLED: "true" };
  const queues = new DeadlineQueues({
    db,
    redis: null as never,
    prefix: "unused",
    clock: { now: () => NOW },
    attempts: 1,
  });
  // The request's own statements only: the sync of its keys follows it (Redis) in the route.
  queues.syncManySoon = () => undefined;
  deps = {
    db,
    queues,
    clock: { now: () => NOW },
    log: silentLogger,
    domains: domainRegistry,
    configs: readDomainConfigs(domainRegistry, env).configs,
  } as unknown as ApiDeps;
  for (let c = 0; c < 3; c++) {
    const companyId = randomUUID();
    const root = await insertIssue(db, companyId, { closedDaysAgo: 5 });
    const child = await insertIssue(db, companyId, { closedDaysAgo: 5, parentId: root });
    const runId = randomUUID();
    await db.issue.update({ where: { id: child }, data: { executionRunId: runId } });
    const workspaces: string[] = [];
    for (const source of [root, child]) {
      const ws = await db.executionWorkspace.create({
        data: {
          companyId,
          sourceIssueId: source,
          mode: "isolated_workspace",
          strategyType: "git_worktree",
          providerType: "git_worktree",
          name: `ws-${source}`,
          status: "active",
        },
      });
      workspaces.push(ws.id);
    }
    await insertRestorePoint({ db }, { companyId, sourceIssueId: root, executionWorkspaceId: workspaces[0] });
    trees.push({ companyId, root, child, workspaces, runId });
  }
});

afterAll(async () => {
  counter.stop();
  await db?.$disconnect();
  await database?.drop();
});

/** `perTree` events of each kind for each tree (issues, runs and workspaces taken in turn). */
function eventsFor(perTree: number): ReclaimEvent[] {
  const events: ReclaimEvent[] = [];
  for (const t of trees) {
    for (let i = 0; i < perTree; i++) {
      const issueId = i % 2 === 0 ? t.child : t.root;
      events.push(
        { type: "issue.changed", companyId: t.companyId, issueId, status: "done", parentId: t.root },
        { type: "run.changed", companyId: t.companyId, runId: t.runId, status: "succeeded" },
        {
          type: "workspace.changed",
          companyId: t.companyId,
          workspaceId: t.workspaces[i % 2]!,
          status: "archived",
        },
        { type: "issue.deleted", companyId: t.companyId, issueId: randomUUID() },
      );
    }
  }
  // Liveness reports out of order, one of them from a clock running ahead: only the newest is
  // kept (store-liveness.sql), whether they come one request each or together.
  const reported = [-60_000, 3_600_000, -120_000, 0].map((ms) => new Date(NOW.getTime() + ms).toISOString());
  for (const [i, reportedAt] of reported.entries()) {
    events.push({
      type: "native_sessions.live",
      sessions: [{ id: `session-${i}`, state: "warm" }],
      reportedAt,
    });
  }
  return events;
}

async function clearLedger(): Promise<void> {
  await db.$executeRawUnsafe("DELETE FROM reclaim_deadlines");
  await db.$executeRawUnsafe("DELETE FROM reclaim_item_deadlines");
  await db.$executeRawUnsafe("DELETE FROM reclaim_native_session_liveness");
}

/** Posts `events` in one request; the statements it sent. */
async function post(events: ReclaimEvent[]): Promise<number> {
  const before = counter.sent();
  const result = await eventsRoute.handle({ body: { events } } as never, deps);
  expect(result.status).toBe(202);
  return counter.sent() - before;
}

/** What the ledger holds: deadlines by key and reason, and woken items, with their due times. */
async function ledger(): Promise<string[]> {
  const deadlines = await db.$queryRawUnsafe<{ row: string }[]>(
    `SELECT domain || ' ' || company_id || ' ' || reason || ' ' || due_at::text AS row FROM reclaim_deadlines`,
  );
  const items = await db.$queryRawUnsafe<{ row: string }[]>(
    `SELECT domain || ' ' || company_id || ' ' || item_id || ' ' || COALESCE(due_at::text, 'none') AS row FROM reclaim_item_deadlines`,
  );
  const liveness = await db.$queryRawUnsafe<{ row: string }[]>(
    `SELECT 'liveness ' || sessions::text || ' ' || reported_at::text AS row FROM reclaim_native_session_liveness`,
  );
  return [...deadlines, ...items, ...liveness].map((r) => r.row).sort();
}

test("an events request sends the same statements for one event of each kind as for many", async () => {
  await clearLedger();
  const few = await post(eventsFor(1));
  await clearLedger();
  const many = await post(eventsFor(20));
  expect(few).toBeGreaterThan(0);
  expect(many).toBe(few);
});

test("many events in one request record what they record one request each", async () => {
  const events = eventsFor(2);
  await clearLedger();
  for (const event of events) await post([event]);
  const oneByOne = await ledger();
  await clearLedger();
  await post(events);
  const together = await ledger();
  expect(together).toEqual(oneByOne);
  // Every domain woke something: each tree's workspaces (git), its directories (task
  // directories) and its company's review (restore points).
  for (const t of trees) {
    for (const ws of t.workspaces) {
      expect(together.some((r) => r.startsWith(`git-restore-points ${t.companyId} ${ws} `))).toBe(true);
    }
    expect(together.some((r) => r.startsWith(`task-directories ${t.companyId} dir:${t.root} `))).toBe(true);
    expect(together.some((r) => r.startsWith(`restore-point-retention ${t.companyId} issue_changed `))).toBe(
      true,
    );
  }
  // The report from a clock running ahead counts as of its arrival, as does the last one: the
  // later of the two is kept.
  expect(together.filter((r) => r.startsWith("liveness "))).toEqual([expect.stringContaining('"session-3"')]);
});

test("the events' queries read the issues, workspaces, runs and restore points asked about by key", async () => {
  // 5,000 issues, 2,000 git worktree workspaces and 2,000 runs of other companies, and 1,000
  // restore points of the first tree's company: scans of any of them would show.
  const pool = poolOf(db);
  await pool.query(
    `WITH made AS (
       INSERT INTO issues (id, company_id, status)
       SELECT gen_random_uuid(), gen_random_uuid(), 'todo' FROM generate_series(1, 5000)
       RETURNING id, company_id)
     INSERT INTO execution_workspaces (id, company_id, source_issue_id, mode, strategy_type, provider_type, name, status)
     SELECT gen_random_uuid(), company_id, id, 'isolated_workspace', 'git_worktree', 'git_worktree', 'w', 'active'
       FROM made LIMIT 2000`,
  );
  await pool.query(
    `INSERT INTO heartbeat_runs (id, company_id, status) SELECT gen_random_uuid(), gen_random_uuid(), 'succeeded' FROM generate_series(1, 2000)`,
  );
  for (let i = 0; i < 1000; i++) {
    await insertRestorePoint({ db }, { companyId: trees[0]!.companyId, sourceIssueId: trees[0]!.root });
  }
  const literal = (value: unknown) => pg.escapeLiteral(JSON.stringify(value));
  const issues = trees.flatMap((t) =>
    [t.child, t.root].map((issueId) => ({ companyId: t.companyId, issueId })),
  );
  const reads = async (file: string, types: string, args: string) =>
    readsUnderEveryPlan(pool, {
      text: sqlFile(path.dirname(file), path.basename(file)),
      types,
      args,
      unnamed: true,
    });
  const src = path.join(__dirname, "../../../packages/core/src/domains");
  const cases = [
    {
      file: `${src}/task-directories/ancestors.sql`,
      types: "jsonb",
      args: literal(issues),
      // Each issue and its parent, each issue's workspaces.
      most: { issues: 4 * issues.length, execution_workspaces: 2 * issues.length },
    },
    {
      file: `${src}/git-restore-points/affected-workspaces.sql`,
      types: "jsonb, jsonb",
      args: `${literal(issues)}, ${literal(trees.map((t) => ({ companyId: t.companyId, workspaceId: t.workspaces[0] })))}`,
      most: { issues: 4 * issues.length, execution_workspaces: 4 * issues.length },
    },
    {
      file: `${src}/git-restore-points/run-issues.sql`,
      types: "jsonb",
      args: literal(trees.map((t) => ({ companyId: t.companyId, runId: t.runId }))),
      // No index has an issue's checkout or execution run: each run's company's issues.
      most: { issues: 4 * trees.length, heartbeat_runs: trees.length },
    },
    {
      file: `${src}/restore-point-retention/companies-with-restore-points.sql`,
      types: "jsonb, jsonb",
      args: `${literal(trees.map((t) => t.companyId))}, ${literal(["active"])}`,
      // A probe per company that stops at its first row.
      most: { execution_workspace_restore_points: 2 * trees.length },
    },
  ];
  for (const c of cases) {
    for (const { analyzed, mode, read } of await reads(c.file, c.types, c.args)) {
      const over = Object.entries(c.most)
        .filter(([table, most]) => (read.get(table) ?? 0) > most)
        .map(([table]) => [table, read.get(table)]);
      const whole = [...read.keys()].filter((table) => !(table in c.most));
      expect({ file: path.basename(c.file), analyzed, mode, over, whole }).toEqual({
        file: path.basename(c.file),
        analyzed,
        mode,
        over: [],
        whole: [],
      });
    }
  }
});
