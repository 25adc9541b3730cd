/**
 * The worker fleet as real processes: several workers share the queues, a worker killed
 * mid-job (SIGKILL) loses nothing and leaves nothing behind, SIGTERM finishes the active
 * job and takes no new one, and the scheduler refuses to start without its token.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
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
import { insertRun, makeFolder, syncRoot } from "@reclaim/testkit/src/fixtures/native-workspace-sync";
import { createScheduler, type SchedulerService } from "@reclaim/scheduler/src/service";

const DOMAIN = "native-workspace-sync";
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
  root = await tempDir("reclaim-fleet-");
  // Child workers give up a dead worker's job after 3 s instead of 30 s.
  env = stackEnv(database, prefix, root.path, {
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

const instance = {
  get instanceRoot() {
    return root.path;
  },
};

async function folderCreated(companyId: string) {
  await scheduler.deps.queues.request([
    { domain: DOMAIN, scope: companyId, reason: "folder_created", dueAt: new Date() },
  ]);
}

/** The start-up check of the instance runs first, on a healthy worker, then that worker stops. */
async function startUpOnAHealthyWorker() {
  const first = worker();
  await first.waitForOutput(/"msg":"worker ready"/);
  await waitFor(async () => (await db.reclaimBatchReport.count()) >= 1, { what: "start-up report" });
  first.kill("SIGTERM");
  await first.exited;
}

/**
 * After the start-up check: a removable folder of a new company, and a worker with the fault
 * `native-workspace-sync.<fault>` (point=action) that has taken the company's job.
 */
async function removalOnADoomedWorker(fault: string) {
  await startUpOnAHealthyWorker();
  const company = randomUUID();
  const run = await insertRun({ db }, { companyId: company });
  const folder = await makeFolder(instance, run);
  const marker = path.join(root.path, "fault-marker");
  const doomed = worker({
    RECLAIM_FAULT_POINTS: `native-workspace-sync.${fault}`,
    RECLAIM_FAULT_MARKER: marker,
  });
  await doomed.waitForOutput(/"msg":"worker ready"/);
  await folderCreated(company);
  return { company, folder, marker, doomed };
}

/** The company's reports once the job a killed worker held was retried by another. */
function retriedReports(company: string) {
  return waitFor(
    async () => {
      const rows = await db.reclaimBatchReport.findMany({ where: { companyId: company } });
      return rows.length >= 1 ? rows : null;
    },
    { what: "the retried job's report", timeoutMs: 60_000 },
  );
}

it("a worker killed mid-job is replaced by another: the folder is handled exactly once and nothing is left behind", async () => {
  const { company, folder, marker, doomed } = await removalOnADoomedWorker("after-rename=hang");
  await waitFor(() => existsSync(marker), { what: "the worker to reach the rename" });
  expect(existsSync(folder)).toBe(false); // renamed aside, transaction still open
  // Two more workers share the queue while the first one holds the job; then it is killed.
  const a = worker();
  const b = worker();
  await Promise.all([a.waitForOutput(/"msg":"worker ready"/), b.waitForOutput(/"msg":"worker ready"/)]);
  expect(await db.reclaimBatchReport.count({ where: { companyId: company } })).toBe(0);
  doomed.kill("SIGKILL");
  expect((await doomed.exited).signal).toBe("SIGKILL");
  const reports = await retriedReports(company);
  expect(reports).toHaveLength(1);
  expect(reports[0]!.entries).toEqual([
    expect.objectContaining({ outcome: "removed", reason: "interrupted_deletion" }),
  ]);
  expect((await readdir(syncRoot(instance))).filter((n) => n.startsWith(".expired-"))).toEqual([]);
  expect(existsSync(folder)).toBe(false);
  expect(await readFile(marker, "utf8")).toBe("native-workspace-sync.after-rename\n");
}, 120_000);

it("a worker killed (kill -9) while deleting a tree it claimed leaves it to the next batch, which deletes and reports it once", async () => {
  const { company, folder, marker, doomed } = await removalOnADoomedWorker("after-claim=kill");
  expect((await doomed.exited).signal).toBe("SIGKILL");
  // Claimed in the dead worker's name, not deleted.
  const claimed = (await readdir(syncRoot(instance))).filter((n) => n.startsWith(".expired-"));
  expect(claimed).toEqual([
    expect.stringMatching(new RegExp(`^\\.expired-${doomed.child.pid}-\\d+-[0-9a-f-]{36}$`)),
  ]);
  worker();
  const reports = await retriedReports(company);
  expect(reports).toHaveLength(1);
  expect(reports[0]!.removed).toBe(1);
  expect(reports[0]!.entries).toEqual([
    expect.objectContaining({
      id: `native-workspace-sync/${claimed[0]}`,
      outcome: "removed",
      reason: "interrupted_deletion",
    }),
  ]);
  expect((await readdir(syncRoot(instance))).filter((n) => n.startsWith("."))).toEqual([]);
  expect(existsSync(folder)).toBe(false);
  expect(await readFile(marker, "utf8")).toBe("native-workspace-sync.after-claim\n");
}, 120_000);

it("a worker killed between finishing a job and queueing its next deadline loses nothing: the scheduler queues it", async () => {
  await startUpOnAHealthyWorker();

  // A folder written just now is kept, with its retention deadline one window later.
  const company = randomUUID();
  await makeFolder(instance, await insertRun({ db }, { companyId: company, status: "running" }), 0);
  const doomed = worker({ RECLAIM_FAULT_POINTS: "worker.before-next-deadline=kill" });
  await doomed.waitForOutput(/"msg":"worker ready"/);
  await folderCreated(company);
  expect((await doomed.exited).signal).toBe("SIGKILL");
  const row = await db.reclaimDeadline.findFirst({ where: { domain: DOMAIN, companyId: company } });
  expect(row!.reason).toBe("retention");
  const job = await waitFor(
    async () => {
      const found = await scheduler.deps.queues.queue(DOMAIN).getJob(`${DOMAIN}--${company}`);
      return found && (await found.getState()) === "delayed" ? found : null;
    },
    { what: "the next deadline's job" },
  );
  expect(job.data.dueAt).toBe(row!.dueAt.toISOString());
}, 60_000);

it("SIGTERM finishes the active job, takes no new one, and exits cleanly", async () => {
  const p = worker({
    RECLAIM_FAULT_POINTS: "native-workspace-sync.before-delete=pause",
    RECLAIM_FAULT_PAUSE_MS: "2000",
    RECLAIM_FAULT_MARKER: path.join(root.path, "m"),
  });
  await p.waitForOutput(/"msg":"worker ready"/);
  await waitFor(async () => (await db.reclaimBatchReport.count()) >= 1, { what: "start-up report" });
  const company = randomUUID();
  const folder = await makeFolder(instance, await insertRun({ db }, { companyId: company }));
  await folderCreated(company);
  await waitFor(() => existsSync(path.join(root.path, "m")), { what: "the job to be active" });
  p.kill("SIGTERM");
  const later = randomUUID();
  await folderCreated(later);
  const exit = await Promise.race([
    p.exited,
    new Promise((resolve) => setTimeout(() => resolve("still running"), 40_000).unref()),
  ]);
  if (exit === "still running") throw new Error(`the worker did not exit after SIGTERM:\n${p.output()}`);
  expect(exit).toEqual({ code: 0, signal: null });
  expect(existsSync(folder)).toBe(false);
  expect(await db.reclaimBatchReport.count({ where: { companyId: company, removed: 1 } })).toBe(1);
  const job = await scheduler.deps.queues.queue(DOMAIN).getJob(`${DOMAIN}--${later}`);
  expect(await job!.getState()).toBe("waiting");
  expect(p.output()).toContain('"msg":"worker stopped"');
});

it("the scheduler refuses to start without RECLAIM_API_TOKEN", async () => {
  const { RECLAIM_API_TOKEN: _token, ...rest } = env;
  const p = spawnService("scheduler", rest);
  processes.push(p);
  expect((await p.exited).code).toBe(2);
  expect(p.output()).toContain("RECLAIM_API_TOKEN: is required");
});
