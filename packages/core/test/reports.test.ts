/**
 * Batch reports: every stored report is added to its domain's running totals and the rollup
 * once, by the fold that takes its figures (readers fold first), reports past
 * RECLAIM_REPORT_RETENTION_DAYS are pruned a few at a time as reports are folded, and /metrics
 * counts from the totals, so pruning never moves a counter back. Real PostgreSQL and Redis;
 * the jobs run through the platform's `runJob`.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import {
  createDb,
  createRedis,
  DAY_MS,
  DeadlineQueues,
  defineDomain,
  FaultPoints,
  FOLD_AFTER,
  FOLD_DELAY_MS,
  foldReports,
  MAX_REPORT_ENTRIES,
  readReportTotals,
  settleJob,
  STATS_RETENTION_DAYS,
  runJob,
  silentLogger,
  TestClock,
  type AnyDomain,
  type Db,
  type DomainControls,
  type DomainId,
} from "@reclaim/core";
import {
  createTestDatabase,
  deleteKeys,
  TEST_REDIS_URL,
  uniquePrefix,
  type TestDatabase,
} from "@reclaim/testkit";
import { Metrics } from "@reclaim/scheduler/src/metrics";
import type { ApiDeps } from "@reclaim/scheduler/src/deps";

// A reserved id that no real domain implements yet carries the test domain.
const ID: DomainId = "nested-clone-migration";
const RETENTION_MS = 30 * DAY_MS;

/** Each batch removes one entry of 4096 bytes and keeps one, taking `ms` of the test clock. */
function domainTaking(clock: TestClock, ms: number): AnyDomain {
  return defineDomain({
    id: ID,
    title: "reports test",
    options: {},
    readConfig: () => ({ enabled: true, dryRun: false }),
    apply: async (ctx) => {
      ctx.report.examined();
      ctx.report.candidate("a", 4096);
      ctx.report.removedEntry("a", 4096);
      ctx.report.examined();
      ctx.report.skip("b", "still_needed");
      clock.advance(ms);
    },
  });
}

let database: TestDatabase;
let db: Db;
let redis: Redis;
let prefix: string;
let queues: DeadlineQueues;
const clock = new TestClock(new Date());

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
  redis = createRedis(TEST_REDIS_URL);
  prefix = uniquePrefix();
  queues = new DeadlineQueues({ db, redis, prefix, clock, attempts: 1 });
});
afterAll(async () => {
  await queues.close();
  redis.disconnect();
  await db.$disconnect();
  await deleteKeys(prefix);
  await database.drop();
});

function run(ms: number, domain = domainTaking(clock, ms), scope: string = randomUUID(), through = db) {
  return runJob(
    {
      db: through,
      queues,
      clock,
      instanceRoot: "/nonexistent",
      log: silentLogger,
      faults: FaultPoints.none(),
      configs: new Map<DomainId, DomainControls>([[ID, { enabled: true, dryRun: false }]]),
      domains: new Map([[ID, domain]]),
      reportRetentionMs: RETENTION_MS,
    },
    {
      id: `sweep--${ID}--${randomUUID()}`,
      data: { kind: "sweep", domain: ID, scope },
      attemptsMade: 0,
      attempts: 1,
      signal: new AbortController().signal,
    },
  );
}

async function totalsOf(domain: string) {
  const totals = (await readReportTotals(db)).find((t) => t.domain === domain);
  if (!totals) throw new Error(`no totals for ${domain}`);
  return totals;
}

async function oldReports(count: number, daysAgo: number): Promise<void> {
  const at = new Date(clock.now().getTime() - daysAgo * DAY_MS);
  await db.reclaimBatchReport.createMany({
    data: Array.from({ length: count }, () => ({
      jobId: "old",
      domain: ID,
      companyId: "instance",
      dryRun: false,
      startedAt: at,
      finishedAt: at,
    })),
  });
}

it("every stored report is added to its domain's running totals, once, by the fold its readers run first", async () => {
  await run(20); // 0.02 s
  await run(3000); // 3 s
  const totals = await totalsOf(ID);
  expect(totals).toMatchObject({
    batches: 2n,
    errors: 0n,
    candidates: 2n,
    removed: 2n,
    candidateBytes: 8192n,
    reclaimedBytes: 8192n,
    skipped: { still_needed: 2 },
  });
  expect(totals.durationSum).toBeCloseTo(3.02, 5);
  // Bounds 0.05 .. 300 s: the 0.02 s batch counts in every bucket, the 3 s one from 5 s on.
  expect(totals.durationBuckets.map(Number)).toEqual([1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
});

it("reports past their retention are pruned a few per folded report; totals and /metrics keep counting", async () => {
  await oldReports(25, 31); // past the 30-day retention
  await oldReports(3, 29); // within it
  const before = await totalsOf(ID);

  await run(10);
  await foldReports(db);
  expect(await db.reclaimBatchReport.count({ where: { jobId: "old" } })).toBe(28 - 20);
  await run(10);
  await foldReports(db);
  expect(await db.reclaimBatchReport.count({ where: { jobId: "old" } })).toBe(3);

  const after = await totalsOf(ID);
  expect(after.batches).toBe(before.batches + 2n);
  expect(after.removed).toBe(before.removed + 2n);

  const metrics = await new Metrics({
    db,
    queues,
    domains: new Map([[ID, domainTaking(clock, 0)]]),
  } as unknown as ApiDeps).render();
  expect(metrics).toContain(`reclaim_batches_total{domain="${ID}",result="ok"} ${after.batches}`);
  expect(metrics).toContain(`reclaim_reclaimed_bytes_total{domain="${ID}"} ${after.reclaimedBytes}`);
  const skips = after.skipped.still_needed;
  expect(metrics).toContain(`reclaim_skips_total{domain="${ID}",reason="still_needed"} ${skips}`);
  expect(metrics).toContain(`reclaim_job_duration_seconds_count{domain="${ID}"} ${after.batches}`);
});

it("folds of two workers add to separate shards of the totals, which add up to every report", async () => {
  // A second database handle folds as a second worker process does: with a settler of its own.
  const other = createDb(database.url);
  try {
    const before = await totalsOf(ID);
    // The clock is shared: batches that take no time of it, so each falls in the first bucket.
    await Promise.all(Array.from({ length: 6 }, () => run(0, undefined, undefined, other)));
    expect(await foldReports(other)).toBe(6);
    await Promise.all(Array.from({ length: 6 }, () => run(0)));
    const after = await totalsOf(ID);
    expect(after.batches).toBe(before.batches + 12n);
    expect(after.removed).toBe(before.removed + 12n);
    expect(after.skipped.still_needed).toBe(before.skipped.still_needed! + 12);
    expect(after.durationBuckets[0]).toBe(before.durationBuckets[0]! + 12n);
    const shards = await db.reclaimReportTotal.count({ where: { domain: ID } });
    expect(shards).toBeGreaterThan(1);
  } finally {
    await other.$disconnect();
  }
});

describe("folding (ledger/settle.ts)", () => {
  const unfolded = () => db.reclaimReportUnfolded.count();

  it("what a process left unfolded when it went away is folded by any other process, and counted once", async () => {
    const gone = createDb(database.url);
    const before = await totalsOf(ID);
    await Promise.all(Array.from({ length: 5 }, () => run(0, undefined, undefined, gone)));
    // Gone before its own fold came due (FOLD_DELAY_MS): its five reports wait, unfolded.
    await gone.$disconnect();
    expect(await unfolded()).toBe(5);
    const after = await totalsOf(ID);
    expect(after.batches).toBe(before.batches + 5n);
    expect(await unfolded()).toBe(0);
    // Folded once: a later fold finds nothing left.
    expect(await foldReports(db)).toBe(0);
    expect((await totalsOf(ID)).batches).toBe(after.batches);
  });

  it("folds running at the same time in several processes, while jobs settle, count every report once", async () => {
    const others = [createDb(database.url), createDb(database.url)];
    try {
      const before = await totalsOf(ID);
      const handles = [db, ...others];
      await Promise.all(
        Array.from({ length: 60 }, async (_, i) => {
          const through = handles[i % handles.length]!;
          await run(0, undefined, undefined, through);
          if (i % 4 === 0) await foldReports(handles[(i + 1) % handles.length]!);
        }),
      );
      const after = await totalsOf(ID);
      expect(after.batches).toBe(before.batches + 60n);
      expect(after.removed).toBe(before.removed + 60n);
      expect(after.skipped.still_needed).toBe(before.skipped.still_needed! + 60);
      expect(await unfolded()).toBe(0);
    } finally {
      await Promise.all(others.map((o) => o.$disconnect()));
    }
  });

  it(`a settler folds on its own ${FOLD_DELAY_MS} ms after its first unfolded report, or once ${FOLD_AFTER} wait`, async () => {
    await foldReports(db);
    await run(0);
    expect(await unfolded()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, FOLD_DELAY_MS + 500));
    expect(await unfolded()).toBe(0);

    const many = FOLD_AFTER + 10;
    for (let i = 0; i < many; i += 32)
      await Promise.all(Array.from({ length: Math.min(32, many - i) }, () => run(0)));
    // The fold came before its delay: at most the reports settled after it wait.
    expect(await unfolded()).toBeLessThan(many - FOLD_AFTER + 32);
  });
});

describe("the hourly rollup (reclaim_report_stats)", () => {
  /** The hourly rollup rows of `scope` and OTHER, every stored report folded in first. */
  const statsOf = async (scope: string) => {
    await foldReports(db);
    return db.$queryRawUnsafe<
      { company_id: string; outcome: string; reason: string; entries: bigint; bytes: bigint }[]
    >(
      `SELECT company_id, outcome, reason, entries, bytes FROM reclaim_report_stats
        WHERE domain = $1 AND company_id IN ($2, $3) ORDER BY company_id, outcome, reason`,
      ID,
      scope,
      OTHER,
    );
  };
  const OTHER = randomUUID();

  it("counts every entry of a batch by company, outcome and reason, also those past the entries a report row keeps", async () => {
    const many = MAX_REPORT_ENTRIES + 5;
    const scope = randomUUID();
    const report = await run(
      0,
      defineDomain({
        id: ID,
        title: "many entries",
        options: {},
        readConfig: () => ({ enabled: true, dryRun: false }),
        apply: async (ctx) => {
          for (let i = 0; i < many; i += 1) ctx.report.removedEntry(`e${i}`, 10);
          ctx.report.skip("x", "still_needed", { companyId: OTHER, bytes: 7 });
        },
      }),
      scope,
    );
    expect(report.entries).toHaveLength(MAX_REPORT_ENTRIES);
    const rows = await statsOf(scope);
    const expected = [
      { company_id: scope, outcome: "removed", reason: "", entries: BigInt(many), bytes: BigInt(many * 10) },
      { company_id: OTHER, outcome: "skipped", reason: "still_needed", entries: 1n, bytes: 7n },
    ].sort((a, b) => a.company_id.localeCompare(b.company_id));
    expect(rows).toEqual(expected);
  });

  it("a report PostgreSQL refuses leaves no figures: nothing of it is left to fold", async () => {
    const scope = randomUUID();
    const settled = settleJob(db, {
      claimed: [],
      deadlines: [],
      pruneBefore: new Date(0),
      report: {
        jobId: "refused\u0000", // no NUL in text: the whole statement is refused
        domain: ID,
        scope,
        dryRun: false,
        checked: 1,
        candidates: 0,
        removed: 1,
        candidateBytes: 0,
        reclaimedBytes: 5,
        skipped: {},
        entries: [{ id: "r", outcome: "removed", bytes: 5 }],
        error: null,
        nextCursor: null,
        cancelled: false,
        startedAt: clock.now(),
        finishedAt: clock.now(),
      },
    });
    await expect(settled).rejects.toThrow();
    await foldReports(db);
    expect(await db.reclaimReportStat.count({ where: { companyId: scope } })).toBe(0);
    expect(await db.reclaimBatchReport.count({ where: { companyId: scope } })).toBe(0);
  });

  it(`rows older than ${STATS_RETENTION_DAYS} days are pruned as reports are folded`, async () => {
    const old = new Date(clock.now().getTime() - (STATS_RETENTION_DAYS + 1) * DAY_MS);
    const kept = new Date(clock.now().getTime() - (STATS_RETENTION_DAYS - 1) * DAY_MS);
    for (const hour of [old, kept]) {
      await db.reclaimReportStat.create({
        data: {
          domain: ID,
          companyId: OTHER,
          hour,
          dryRun: false,
          outcome: "removed",
          entries: 1n,
          bytes: 1n,
        },
      });
    }
    await run(0);
    await foldReports(db);
    const left = await db.reclaimReportStat.findMany({ where: { companyId: OTHER, outcome: "removed" } });
    expect(left.map((r) => r.hour)).toEqual([kept]);
  });
});
