/**
 * SIGKILL of a worker at each fault point of a task directory's save-remove and reopen loses
 * no file: right after the kill the directory (under its name or its recorded `.expired`
 * name) or an active, verified restore point exists, and a healthy worker then finishes the
 * removal (or the reopen), after which a reopen brings back every byte. Real child worker
 * processes, real PostgreSQL, Redis and local_disk storage.
 */
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import { createDb, type Db } from "@reclaim/core";
import {
  createTestDatabase,
  deleteKeys,
  spawnService,
  stackEnv,
  tempDir,
  uniquePrefix,
  waitFor,
  type ServiceProcess,
  type TestDatabase,
} from "@reclaim/testkit";
import { snapshotOf, task, TASK_ENV, type Task } from "@reclaim/testkit/src/fixtures/task-directories";
import { createScheduler, type SchedulerService } from "@reclaim/scheduler/src/service";

let database: TestDatabase;
let db: Db;
let prefix: string;
let root: { path: string; remove(): Promise<void> };
let env: Record<string, string>;
let scheduler: SchedulerService;
const processes: ServiceProcess[] = [];

beforeEach(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
  prefix = uniquePrefix();
  root = await tempDir("reclaim-kill-");
  env = stackEnv(database, prefix, root.path, {
    ...TASK_ENV,
    RECLAIM_JOB_LOCK_MS: "3000",
    RECLAIM_STALLED_INTERVAL_MS: "1000",
    RECLAIM_LOG_LEVEL: "info",
  });
  scheduler = await createScheduler({ env: { ...env, RECLAIM_LOG_LEVEL: "error" } });
  await scheduler.started;
});

afterEach(async () => {
  for (const p of processes.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
  await scheduler.stop();
  await db.$disconnect();
  await deleteKeys(prefix);
  await database.drop();
  await root.remove();
});

function worker(extra: Record<string, string> = {}): ServiceProcess {
  const p = spawnService("worker", { ...env, ...extra });
  processes.push(p);
  return p;
}

const asStack = () => ({ db, instanceRoot: root.path });

async function api(method: "GET" | "POST", url: string, body?: unknown) {
  const response = await scheduler.app.inject({
    method,
    url,
    ...(body === undefined ? {} : { payload: body as object }),
    headers: { authorization: `Bearer ${env.RECLAIM_API_TOKEN}` },
  });
  return { status: response.statusCode, body: response.json() };
}

const exists = (p: string) =>
  lstat(p).then(
    () => true,
    () => false,
  );

async function nothingLost(t: Task): Promise<void> {
  const active = await db.executionWorkspaceRestorePoint.count({
    where: { executionWorkspaceId: t.workspace, status: "active", sha256: { not: null } },
  });
  const siblings = await readdir(path.dirname(t.dir));
  expect((await exists(t.dir)) || siblings.some((n) => n.startsWith(".expired-")) || active === 1).toBe(true);
  if (!(await exists(t.dir))) expect(active).toBe(1);
}

async function closeAndKillAt(point: string): Promise<{ t: Task; before: Record<string, unknown> }> {
  const t = await task(asStack());
  const before = await snapshotOf(t.dir);
  for (const k of Object.keys(before)) if (k.startsWith("node_modules")) delete before[k];
  const doomed = worker({ RECLAIM_FAULT_POINTS: `${point}=kill` });
  await doomed.waitForOutput(/"msg":"worker ready"/, 60_000);
  const r = await api("POST", "/v1/events", {
    events: [{ type: "issue.changed", companyId: t.company, issueId: t.issue, status: "done" }],
  });
  expect(r.status).toBe(202);
  expect((await doomed.exited).signal).toBe("SIGKILL");
  await nothingLost(t);
  return { t, before };
}

async function removedByAHealthyWorker(t: Task): Promise<void> {
  const healthy = worker();
  await healthy.waitForOutput(/"msg":"worker ready"/, 60_000);
  await waitFor(
    async () => {
      const row = await db.executionWorkspace.findUniqueOrThrow({ where: { id: t.workspace } });
      const state = (row.metadata as { isolatedTaskDirectoryRetention?: { state: string } } | null)
        ?.isolatedTaskDirectoryRetention;
      return state?.state === "removed" && !(await exists(t.dir));
    },
    { what: "the removal finished", timeoutMs: 150_000 },
  );
  expect((await readdir(path.dirname(t.dir))).filter((n) => n.startsWith(".expired-"))).toEqual([]);
}

async function reopenRestores(t: Task, before: Record<string, unknown>): Promise<void> {
  const answer = await api(
    "POST",
    `/v1/companies/${t.company}/execution-workspaces/${t.workspace}/reopen?wait=90`,
    {
      reason: "run",
    },
  );
  expect(answer.body.outcome).toBe("restored");
  expect(await snapshotOf(t.dir)).toEqual(before);
}

describe.each([
  "task-directories.sealed",
  "task-directories.read-back",
  "task-directories.captured",
  "task-directories.archived",
  "task-directories.before-rename",
  "task-directories.before-recheck",
  "task-directories.renamed",
  "task-directories.after-rename",
  "task-directories.before-delete",
  "task-directories.finished",
])("a worker killed at %s", (point) => {
  it("loses no file, and a later sweep finishes the removal", async () => {
    const { t, before } = await closeAndKillAt(point);
    await removedByAHealthyWorker(t);
    await reopenRestores(t, before);
  }, 240_000);
});

describe.each(["task-directories.staged", "task-directories.restored"])("a reopen killed at %s", (point) => {
  it("keeps the restore point, and the retried reopen restores every byte", async () => {
    const t = await task(asStack());
    const before = await snapshotOf(t.dir);
    for (const k of Object.keys(before)) if (k.startsWith("node_modules")) delete before[k];
    await api("POST", "/v1/events", {
      events: [{ type: "issue.changed", companyId: t.company, issueId: t.issue, status: "done" }],
    });
    await removedByAHealthyWorker(t);
    for (const p of processes.splice(0)) {
      p.kill("SIGKILL");
      await p.exited;
    }
    const doomed = worker({ RECLAIM_FAULT_POINTS: `${point}=kill` });
    await doomed.waitForOutput(/"msg":"worker ready"/, 60_000);
    const queued = await api(
      "POST",
      `/v1/companies/${t.company}/execution-workspaces/${t.workspace}/reopen`,
      {
        reason: "run",
      },
    );
    expect((await doomed.exited).signal).toBe("SIGKILL");
    await nothingLost(t);
    worker();
    const finished = await waitFor(
      async () => {
        const job = await api("GET", `/v1/jobs/${queued.body.jobId}`);
        return job.body.state === "completed" ? job.body : null;
      },
      { what: "the retried reopen", timeoutMs: 150_000 },
    );
    expect(finished.result.outcome).toBe("restored");
    expect(await snapshotOf(t.dir)).toEqual(before);
  }, 240_000);
});
