/**
 * Native workspace sync folders: when retention runs (start-up discovery, folder created,
 * real deadlines), crash recovery of the rename-then-delete protocol, batch limits with
 * their continuation cursors, the env controls and the log line.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  createLogger,
  FaultPoints,
  INSTANCE_SCOPE,
  PermanentError,
  readConfigOf,
  runJob,
  silentLogger,
  type BatchReport,
} from "@reclaim/core";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import { setDeletable } from "./native-session-backups.fixtures";
import {
  DOMAIN,
  insertRun,
  makeFolder,
  sweep,
  syncRoot,
} from "@reclaim/testkit/src/fixtures/native-workspace-sync";

const DAY = 24 * 3600 * 1000;

async function expiredLeftovers(stack: Stack): Promise<string[]> {
  return (await readdir(syncRoot(stack)).catch(() => [])).filter((n) => n.startsWith(".expired-"));
}

/** Runs one deadline job of `scope` in this process, with fault handlers and a signal. */
function runDeadlineJob(stack: Stack, scope: string, faults: FaultPoints, signal: AbortSignal) {
  const deps = {
    db: stack.db,
    queues: stack.scheduler.deps.queues,
    clock: stack.scheduler.deps.clock,
    instanceRoot: stack.instanceRoot,
    log: silentLogger,
    faults,
    configs: stack.scheduler.deps.configs,
    domains: stack.scheduler.deps.domains,
  };
  return runJob(deps, {
    id: `${DOMAIN}--${scope}`,
    data: { kind: "deadline", domain: DOMAIN, scope },
    attemptsMade: 0,
    attempts: 3,
    signal,
  });
}

describe("start-up", () => {
  let stack: Stack;
  afterEach(async () => stack?.stop());

  it("discovers every company with folders and runs its check; orphans are removed by the instance job", async () => {
    const a = randomUUID();
    const b = randomUUID();
    const runs: string[] = [];
    const orphan = randomUUID();
    stack = await startStack({
      seed: async (ctx) => {
        for (const company of [a, b]) {
          const run = await insertRun(ctx, { companyId: company });
          await makeFolder(ctx, run);
          runs.push(run);
        }
        await makeFolder(ctx, orphan);
      },
    });
    const reports = await stack.waitForReports(DOMAIN, (r) => r.filter((x) => x.removed > 0).length >= 3);
    const byScope = new Map(reports.filter((r) => r.removed > 0).map((r) => [r.companyId, r]));
    expect([...byScope.keys()].sort()).toEqual([a, b, null].sort());
    for (const run of [...runs, orphan]) expect(existsSync(path.join(syncRoot(stack), run))).toBe(false);
  });

  it("with no folders, schedules nothing after the start-up check", async () => {
    stack = await startStack();
    await stack.waitForReports(DOMAIN, (r) => r.length >= 1);
    await stack.idle();
    expect(await stack.db.reclaimDeadline.count({ where: { domain: DOMAIN } })).toBe(0);
    const counts = await stack.scheduler.deps.queues.queue(DOMAIN).getJobCounts("delayed", "waiting");
    expect(counts).toEqual({ delayed: 0, waiting: 0 });
  });
});

describe("deadlines", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  it("wake when a run creates its folder, and a kept folder is rechecked one window later", async () => {
    const company = randomUUID();
    const run = await insertRun(stack, { companyId: company, status: "running", finishedDaysAgo: null });
    await makeFolder(stack, run, 0);
    const accepted = await stack.api("POST", "/v1/events", {
      events: [{ type: "native_workspace_sync.folder_created", companyId: company, runId: run }],
    });
    expect(accepted.status).toBe(202);
    const ours = (x: BatchReport) => x.companyId === company;
    const report = (await stack.waitForReports(DOMAIN, (r) => r.some(ours))).find(ours);
    expect(report!.entries).toEqual([
      expect.objectContaining({ outcome: "skipped", reason: "folder_recently_modified" }),
    ]);
    const deadlines = await stack.api("GET", `/v1/deadlines?domain=${DOMAIN}`);
    const mine = deadlines.body.deadlines.filter((d: { companyId: string }) => d.companyId === company);
    expect(mine).toHaveLength(1);
    expect(Math.abs(Date.parse(mine[0].dueAt) - (Date.now() + 7 * DAY))).toBeLessThan(60_000);
    // The report is written inside the job; its next deadline is queued once the job has
    // finished (the same job id), so the delayed job appears a moment after the report.
    const queue = stack.scheduler.deps.queues.queue(DOMAIN);
    await waitFor(
      async () => (await (await queue.getJob(`${DOMAIN}--${company}`))?.getState()) === "delayed",
      {
        what: "the recheck queued as a delayed job",
      },
    );
  });

  it("of a settled run come from its finish plus the window, or its newest file if later", async () => {
    const company = randomUUID();
    const run = await insertRun(stack, { companyId: company, finishedDaysAgo: 3 });
    await makeFolder(stack, run, 5);
    await stack.api("POST", "/v1/events", {
      events: [{ type: "native_workspace_sync.folder_created", companyId: company, runId: run }],
    });
    await stack.waitForReports(DOMAIN, (r) => r.some((x) => x.companyId === company));
    const row = await stack.db.reclaimDeadline.findFirst({ where: { companyId: company } });
    expect(Math.abs(row!.dueAt.getTime() - (Date.now() + 4 * DAY))).toBeLessThan(60_000);
  });
});

describe("crash recovery", () => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await startStack({ worker: false });
    // Let the start-up check finish first, so only the sweep below meets the fault.
    const plain = await stack.startWorker();
    await stack.waitForReports(DOMAIN, (r) => r.length >= 1);
    await stack.idle();
    await plain.stop();
  });
  afterEach(async () => stack?.stop());

  it.each(["native-workspace-sync.after-rename", "native-workspace-sync.before-delete"])(
    "a batch that dies at %s leaves only an .expired-<UUID> leftover, which the next batch deletes",
    async (point) => {
      const company = randomUUID();
      const run = await insertRun(stack, { companyId: company });
      const folder = await makeFolder(stack, run);
      const crashing = await stack.startWorker({
        faults: FaultPoints.of({
          [point]: () => {
            throw new PermanentError(`injected at ${point}`); // no BullMQ retry: the next batch must finish the work
          },
        }),
      });
      const crashed = await sweep(stack, company);
      expect(crashed.error).toContain(point);
      await crashing.stop();
      // A failed batch tries again in 15 minutes.
      const retry = await stack.db.reclaimDeadline.findFirst({
        where: { domain: DOMAIN, companyId: company, reason: "retry" },
      });
      expect(Math.abs(retry!.dueAt.getTime() - (Date.now() + 15 * 60_000))).toBeLessThan(60_000);
      expect(existsSync(folder)).toBe(false);
      const leftovers = await expiredLeftovers(stack);
      expect(leftovers).toHaveLength(1);
      expect(leftovers[0]).toMatch(/^\.expired-[0-9a-f-]{36}$/);

      await stack.startWorker();
      const finished = await sweep(stack, company);
      expect(finished.entries).toContainEqual(
        expect.objectContaining({
          id: `native-workspace-sync/${leftovers[0]}`,
          outcome: "removed",
          reason: "interrupted_deletion",
        }),
      );
      expect(await expiredLeftovers(stack)).toEqual([]);
    },
  );
});

describe("each tree is deleted and reported once", () => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await startStack({ worker: false });
  });
  afterEach(async () => stack?.stop());

  it("a tree a job has claimed and is deleting is not taken by another job's leftover pass", async () => {
    const company = randomUUID();
    const other = randomUUID();
    const run = await insertRun(stack, { companyId: company });
    await makeFolder(stack, run, 10, 256 * 1024);
    await stack.scheduler.deps.queues.request([
      { domain: DOMAIN, scope: company, reason: "folder_created", dueAt: new Date() },
      { domain: DOMAIN, scope: other, reason: "folder_created", dueAt: new Date() },
    ]);
    // The company's job has committed its rename and claimed the tree for deletion; right
    // then another company's job runs a whole batch, leftover pass included.
    let during: BatchReport | null = null;
    let claimedNames: string[] = [];
    const faults = FaultPoints.of({
      "native-workspace-sync.after-claim": async () => {
        claimedNames = (await readdir(syncRoot(stack))).filter((n) => n.startsWith("."));
        during = await runDeadlineJob(stack, other, FaultPoints.none(), new AbortController().signal);
      },
    });
    const owner = await runDeadlineJob(stack, company, faults, new AbortController().signal);
    expect(claimedNames).toHaveLength(1);
    expect(during).toMatchObject({ error: null, removed: 0, reclaimedBytes: 0 });
    expect(owner).toMatchObject({ error: null, candidates: 1, removed: 1 });
    expect(owner.reclaimedBytes).toBe(owner.candidateBytes);
    expect(await readdir(syncRoot(stack))).toEqual([]);
    const reports = await stack.db.reclaimBatchReport.findMany({ where: { domain: DOMAIN } });
    expect(reports.reduce((n, r) => n + r.removed, 0)).toBe(1);
  });
});

describe("batch limits", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  it("remove at most 50 folders per batch and continue from where the previous batch stopped", async () => {
    const company = randomUUID();
    for (let i = 0; i < 120; i++)
      await makeFolder(stack, await insertRun(stack, { companyId: company }), 10, 4096);
    const first = await sweep(stack, company);
    expect(first).toMatchObject({ checked: 50, removed: 50 });
    expect(first.nextCursor).not.toBeNull();
    const second = await sweep(stack, company, { cursor: first.nextCursor });
    expect(second).toMatchObject({ checked: 50, removed: 50 });
    const third = await sweep(stack, company, { cursor: second.nextCursor });
    expect(third).toMatchObject({ checked: 20, removed: 20, nextCursor: null });
  });

  it("check at most 200 folders per batch", async () => {
    const company = randomUUID();
    for (let i = 0; i < 230; i++)
      await makeFolder(stack, await insertRun(stack, { companyId: company, finishedDaysAgo: 1 }), 10, 0);
    const first = await sweep(stack, company);
    expect(first).toMatchObject({ checked: 200, removed: 0 });
    const second = await sweep(stack, company, { cursor: first.nextCursor });
    expect(second).toMatchObject({ checked: 30, nextCursor: null });
  });

  it("a dry run's batches are the real run's: it stops at the 50 candidates a real batch would remove, and removes none", async () => {
    const company = randomUUID();
    for (let i = 0; i < 60; i++)
      await makeFolder(stack, await insertRun(stack, { companyId: company }), 10, 0);
    const first = await sweep(stack, company, { dryRun: true });
    expect(first).toMatchObject({ checked: 50, candidates: 50, removed: 0 });
    const second = await sweep(stack, company, { dryRun: true, cursor: first.nextCursor });
    expect(second).toMatchObject({ checked: 10, candidates: 10, nextCursor: null });
  });

  it("deadline jobs chain through a full batch at once, with their own cursor", async () => {
    const company = randomUUID();
    for (let i = 0; i < 70; i++)
      await makeFolder(stack, await insertRun(stack, { companyId: company }), 10, 0);
    await stack.api("POST", "/v1/events", {
      events: [{ type: "native_workspace_sync.folder_created", companyId: company, runId: randomUUID() }],
    });
    const reports = await stack.waitForReports(
      DOMAIN,
      (r) => r.filter((x) => x.companyId === company).reduce((n, x) => n + x.removed, 0) >= 70,
    );
    const mine = reports.filter((r) => r.companyId === company).reverse();
    expect(mine.map((r) => r.removed)).toEqual([50, 20]);
    expect(await stack.db.reclaimCursor.count({ where: { companyId: company } })).toBe(0);
  });

  it("try at most 50 leftovers per batch, and one that cannot be deleted does not block the others", async () => {
    // The first in walk order holds a file that cannot be deleted (immutable, or a read-only folder).
    const stuck = path.join(syncRoot(stack), `.expired-${randomUUID().replace(/^./, "0")}`);
    await mkdir(stuck, { recursive: true });
    await writeFile(path.join(stuck, "seed.tar"), "stuck");
    await setDeletable(path.join(stuck, "seed.tar"), false);
    for (let i = 0; i < 60; i++) await mkdir(path.join(syncRoot(stack), `.expired-${randomUUID()}`));
    const company = randomUUID();
    const tried = (r: BatchReport, outcome: string) =>
      (r.entries ?? []).filter(
        (e) =>
          e.outcome === outcome &&
          (e.reason === "interrupted_deletion" || e.reason === "leftover_delete_failed"),
      );
    let left: string[] = [];
    try {
      const first = await sweep(stack, company);
      expect(tried(first, "removed")).toHaveLength(49);
      expect(tried(first, "failed")).toHaveLength(1);
      // The stuck one keeps the name it was claimed with, which may sort after the cursor and
      // be tried once more; every other leftover is deleted by the second batch.
      const second = await sweep(stack, company, { cursor: first.nextCursor });
      expect(tried(second, "removed")).toHaveLength(11);
      left = await expiredLeftovers(stack);
      expect(left).toHaveLength(1);
    } finally {
      for (const name of left.length > 0 ? left : await expiredLeftovers(stack))
        await setDeletable(path.join(syncRoot(stack), name, "seed.tar"), true).catch(() => undefined);
    }
    // The one it could not delete is tried again in 15 minutes.
    const retry = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: company, reason: "retry" },
    });
    expect(Math.abs(retry!.dueAt.getTime() - (Date.now() + 15 * 60_000))).toBeLessThan(60_000);
    expect(existsSync(path.join(stack.instanceRoot, "native-workspace-sync"))).toBe(true);
  });
});

describe("controls", () => {
  let stack: Stack;
  afterEach(async () => stack?.stop());

  it("ENABLED=false stops removing folders: no worker serves the domain and sweeps are refused", async () => {
    stack = await startStack({ env: { PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_ENABLED: "false" } });
    expect(stack.worker!.domains).not.toContain(DOMAIN);
    const refused = await stack.api("POST", "/v1/sweeps", { domain: DOMAIN, companyId: randomUUID() });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: "RECLAIM_ERR_DOMAIN_DISABLED", field: "domain" });
    const events = await stack.api("POST", "/v1/events", {
      events: [
        { type: "native_workspace_sync.folder_created", companyId: randomUUID(), runId: randomUUID() },
      ],
    });
    expect(events.body.deadlines).toBe(0);
    expect(await stack.db.reclaimDeadline.count({ where: { domain: DOMAIN } })).toBe(0);
  });

  it("DRY_RUN=true reports candidates without removing folders", async () => {
    stack = await startStack({ env: { PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN: "true" } });
    const company = randomUUID();
    const folder = await makeFolder(stack, await insertRun(stack, { companyId: company }));
    const report = await sweep(stack, company);
    expect(report).toMatchObject({ dryRun: true, candidates: 1, removed: 0 });
    expect(existsSync(folder)).toBe(true);
  });

  it("DAYS sets the window", async () => {
    stack = await startStack({ env: { PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DAYS: "2" } });
    const company = randomUUID();
    const run = await insertRun(stack, { companyId: company, finishedDaysAgo: 3 });
    await makeFolder(stack, run, 3);
    expect(await sweep(stack, company)).toMatchObject({ removed: 1 });
  });

  it("DAYS below 1 is refused at start with the variable named", () => {
    expect(() => readConfigOf(DOMAIN, { PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DAYS: "0" })).toThrow(
      "PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DAYS: must be at least 1 (got 0)",
    );
    expect(() =>
      readConfigOf(DOMAIN, { PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN: "maybe" }),
    ).toThrow('PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN: must be true or false (got "maybe")');
  });
});

describe("logs", () => {
  it("each batch that finds candidates logs them with candidate and reclaimed allocated bytes and skip reasons", async () => {
    const lines: Record<string, unknown>[] = [];
    const stack = await startStack({ log: createLogger("info", {}, (line) => lines.push(JSON.parse(line))) });
    try {
      const company = randomUUID();
      const gone = await insertRun(stack, { companyId: company });
      await makeFolder(stack, gone);
      await makeFolder(
        stack,
        await insertRun(stack, { companyId: company, status: "running", finishedDaysAgo: null }),
      );
      await sweep(stack, company);
      const line = lines.find(
        (l) => l.event === "native_workspace_sync.retention" && l.companyId === company,
      );
      expect(line).toMatchObject({
        candidates: [`native-workspace-sync/${gone}`],
        candidateBytes: expect.any(Number),
        reclaimedBytes: expect.any(Number),
        skipped: { run_not_settled: 1 },
      });
      expect(line!.reclaimedBytes).toBe(line!.candidateBytes);
    } finally {
      await stack.stop();
    }
  });
});

describe("stopping early", () => {
  let stack: Stack;
  beforeEach(async () => {
    stack = await startStack({ worker: false });
  });
  afterEach(async () => stack?.stop());

  const runDirectly = (scope: string, faults: FaultPoints, signal: AbortSignal) =>
    runDeadlineJob(stack, scope, faults, signal);

  it("a batch aborted inside a folder walk (cancel, shutdown) reports where it stopped, is not retried, and makes its claim due again", async () => {
    const company = randomUUID();
    for (let i = 0; i < 3; i++) await makeFolder(stack, await insertRun(stack, { companyId: company }));
    await stack.scheduler.deps.queues.request([
      { domain: DOMAIN, scope: company, reason: "folder_created", dueAt: new Date() },
    ]);
    const abort = new AbortController();
    let surveyed = 0;
    // The job is told to stop while it walks the first folder: the walk throws.
    const faults = FaultPoints.of({
      "native-workspace-sync.surveyed": () => {
        surveyed += 1;
        abort.abort(new Error("cancelled"));
        abort.signal.throwIfAborted();
      },
    });
    const report = await runDirectly(company, faults, abort.signal);
    expect(report).toMatchObject({ cancelled: true, error: null, removed: 0 });
    expect(surveyed).toBe(1);
    const due = await stack.db.reclaimDeadline.findMany({ where: { domain: DOMAIN, companyId: company } });
    expect(due.map((d) => d.reason)).toEqual(["folder_created"]);
    expect(due[0]!.dueAt.getTime()).toBeLessThanOrEqual(Date.now());
    for (const name of await readdir(syncRoot(stack))) expect(name.startsWith(".expired-")).toBe(false);
  });

  it("a batch walks each folder once: a candidate only under its run's lock, a kept one before the transaction", async () => {
    const company = randomUUID();
    for (let i = 0; i < 3; i++) await makeFolder(stack, await insertRun(stack, { companyId: company }));
    for (let i = 0; i < 2; i++)
      await makeFolder(stack, await insertRun(stack, { companyId: company, status: "running" }));
    await stack.scheduler.deps.queues.request([
      { domain: DOMAIN, scope: company, reason: "folder_created", dueAt: new Date() },
    ]);
    // At each walk: how many runs' finalization ownership locks are held (the batch's own).
    const locksHeld: number[] = [];
    const faults = FaultPoints.of({
      "native-workspace-sync.surveyed": async () => {
        const [row] = await stack.db.$queryRawUnsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM pg_locks
            WHERE locktype = 'advisory' AND granted AND objsubid = 2
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND classid::int = hashtext('paperclip.native_run_finalization')`,
        );
        locksHeld.push(row!.n);
      },
    });
    const report = await runDeadlineJob(stack, company, faults, new AbortController().signal);
    expect(report).toMatchObject({ error: null, checked: 5, candidates: 3, removed: 3 });
    expect(locksHeld.sort()).toEqual([0, 0, 3, 3, 3]);
  });

  it("a run deleted after a batch of its company saw it leaves its folder to the instance job (no run)", async () => {
    const company = randomUUID();
    const run = await insertRun(stack, { companyId: company, status: "running" });
    const folder = await makeFolder(stack, run);
    const due = (scope: string) =>
      stack.scheduler.deps.queues.request([
        { domain: DOMAIN, scope, reason: "folder_created", dueAt: new Date() },
      ]);
    const once = async (scope: string) => {
      await due(scope);
      return runDeadlineJob(stack, scope, FaultPoints.none(), new AbortController().signal);
    };
    expect(await once(company)).toMatchObject({ checked: 1, candidates: 0 });
    await stack.db.heartbeatRun.delete({ where: { id: run } });
    expect(await once(company)).toMatchObject({ error: null, checked: 0 });
    expect(existsSync(folder)).toBe(true);
    const orphans = await once(INSTANCE_SCOPE);
    expect(orphans.entries).toContainEqual(
      expect.objectContaining({ id: `native-workspace-sync/${run}`, outcome: "candidate", reason: "no_run" }),
    );
    expect(existsSync(folder)).toBe(false);
  });

  it("a candidate that vanishes before its rename gets an outcome (vanished), so its bytes are accounted for", async () => {
    const company = randomUUID();
    const run = await insertRun(stack, { companyId: company });
    const folder = await makeFolder(stack, run);
    await stack.scheduler.deps.queues.request([
      { domain: DOMAIN, scope: company, reason: "folder_created", dueAt: new Date() },
    ]);
    const faults = FaultPoints.of({
      "native-workspace-sync.before-rename": () => rm(folder, { recursive: true, force: true }),
    });
    const report = await runDirectly(company, faults, new AbortController().signal);
    expect(report).toMatchObject({ error: null, candidates: 1, removed: 0 });
    const entries = (report.entries ?? []).filter((e) => e.id === `native-workspace-sync/${run}`);
    expect(entries.map((e) => [e.outcome, e.reason ?? null])).toEqual([
      ["candidate", "no_sync_reference"],
      ["noted", "vanished"],
    ]);
  });

  it("deadline discovery reads run state 200 folders at a time and stops when the worker drains", async () => {
    const companies = [randomUUID(), randomUUID(), randomUUID()];
    for (let i = 0; i < 450; i++)
      await makeFolder(stack, await insertRun(stack, { companyId: companies[i % 3]! }), 10, 0);
    const startup = () =>
      stack.scheduler.deps.queues.request([
        { domain: DOMAIN, scope: INSTANCE_SCOPE, reason: "startup", dueAt: new Date() },
      ]);
    const companyStartups = () =>
      stack.db.reclaimDeadline.count({
        where: { domain: DOMAIN, companyId: { in: companies }, reason: "startup" },
      });
    await startup();

    // Drained during the second read: no company is scheduled from half a discovery, and the
    // start-up claim is due again at once for the next worker.
    const abort = new AbortController();
    let chunks = 0;
    const drained = await runDirectly(
      INSTANCE_SCOPE,
      FaultPoints.of({
        "native-workspace-sync.discovery-chunk": () => {
          chunks += 1;
          if (chunks === 2) abort.abort(new Error("worker draining"));
        },
      }),
      abort.signal,
    );
    expect(chunks).toBe(2);
    expect(drained).toMatchObject({ cancelled: true, error: null });
    expect(await companyStartups()).toBe(0);
    const again = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "startup" },
    });
    expect(again!.dueAt.getTime()).toBeLessThanOrEqual(Date.now());

    // Undisturbed: 450 folders are read in 3 queries and every company gets its start-up check.
    chunks = 0;
    const counted = FaultPoints.of({ "native-workspace-sync.discovery-chunk": () => void (chunks += 1) });
    await runDirectly(INSTANCE_SCOPE, counted, new AbortController().signal);
    expect(chunks).toBe(3);
    expect(await companyStartups()).toBe(3);
  });
});
