/**
 * The deadline ledger and its BullMQ mirror, against real PostgreSQL and Redis: what is
 * scheduled, when, and that nothing is lost or doubled.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import {
  claimDue,
  createDb,
  createRedis,
  DeadlineQueues,
  deadlineJobId,
  queueName,
  settleJob,
  systemClock,
  type ClaimedDeadline,
  type Db,
  type DeadlineRequest,
} from "@reclaim/core";
import {
  createTestDatabase,
  deleteKeys,
  TEST_REDIS_URL,
  uniquePrefix,
  type TestDatabase,
} from "@reclaim/testkit";

const DOMAIN = "native-workspace-sync";
let database: TestDatabase;
let db: Db;
let redis: Redis;
let prefix: string;
let queues: DeadlineQueues;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
  redis = createRedis(TEST_REDIS_URL);
  prefix = uniquePrefix();
  queues = new DeadlineQueues({ db, redis, prefix, clock: systemClock, attempts: 1 });
});
afterAll(async () => {
  await queues.close();
  redis.disconnect();
  await db.$disconnect();
  await deleteKeys(prefix);
  await database.drop();
});

/** When BullMQ will run the delayed job (ms), read from its delayed set. */
async function scheduledAt(scope: string): Promise<number | null> {
  const score = await redis.zscore(
    `${prefix}:${queueName(DOMAIN)}:delayed`,
    deadlineJobId({ domain: DOMAIN, scope }),
  );
  return score === null ? null : Math.floor(Number(score) / 0x1000);
}

const inMinutes = (m: number) => new Date(Date.now() + m * 60_000);

describe("deadline-keyed jobs", () => {
  it("have one pending job per domain and company, whose id is derived from both and has no ':'", async () => {
    const scope = randomUUID();
    await queues.request([
      { domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(60) },
      { domain: DOMAIN, scope, reason: "recheck", dueAt: inMinutes(90) },
    ]);
    const delayed = await queues.queue(DOMAIN).getDelayed();
    const mine = delayed.filter((j) => j.data.scope === scope);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.id).toBe(`${DOMAIN}--${scope}`);
    expect(mine[0]!.id).not.toContain(":");
  });

  it("move earlier when an earlier deadline arrives", async () => {
    const scope = randomUUID();
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(60) }]);
    expect(Math.abs((await scheduledAt(scope))! - inMinutes(60).getTime())).toBeLessThan(5000);
    await queues.request([{ domain: DOMAIN, scope, reason: "folder_created", dueAt: inMinutes(5) }]);
    expect(Math.abs((await scheduledAt(scope))! - inMinutes(5).getTime())).toBeLessThan(5000);
  });

  it("are never postponed by a later deadline, for the same reason or another", async () => {
    const scope = randomUUID();
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(5) }]);
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(600) }]);
    await queues.request([{ domain: DOMAIN, scope, reason: "other", dueAt: inMinutes(700) }]);
    expect(Math.abs((await scheduledAt(scope))! - inMinutes(5).getTime())).toBeLessThan(5000);
    const row = await db.reclaimDeadline.findUnique({
      where: { domain_companyId_reason: { domain: DOMAIN, companyId: scope, reason: "retention" } },
    });
    expect(Math.abs(row!.dueAt.getTime() - inMinutes(5).getTime())).toBeLessThan(5000);
  });

  it("enqueue due work once, however many schedulers request it at the same time", async () => {
    const scope = randomUUID();
    const others = Array.from(
      { length: 4 },
      () => new DeadlineQueues({ db, redis, prefix, clock: systemClock, attempts: 1 }),
    );
    await Promise.all(
      others.map((q) =>
        q.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: new Date(Date.now() - 1000) }]),
      ),
    );
    const waiting = (await queues.queue(DOMAIN).getWaiting()).filter((j) => j.data.scope === scope);
    expect(waiting).toHaveLength(1);
    await Promise.all(others.map((q) => q.close()));
  });

  it("schedule nothing when the ledger is empty", async () => {
    const fresh = uniquePrefix();
    const empty = await createTestDatabase();
    const emptyDb = createDb(empty.url);
    const q = new DeadlineQueues({ db: emptyDb, redis, prefix: fresh, clock: systemClock, attempts: 1 });
    try {
      expect(await q.reconcile()).toBe(0);
      expect(await redis.keys(`${fresh}:*`)).toEqual([]);
    } finally {
      await q.close();
      await emptyDb.$disconnect();
      await empty.drop();
    }
  });

  it("are rebuilt from the ledger after Redis lost them", async () => {
    const scope = randomUUID();
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(30) }]);
    await deleteKeys(prefix); // what a Redis restart without persistence leaves
    expect(await scheduledAt(scope)).toBeNull();
    await queues.reconcile();
    expect(Math.abs((await scheduledAt(scope))! - inMinutes(30).getTime())).toBeLessThan(5000);
  });

  it("are removed when the ledger no longer holds anything for their key", async () => {
    const scope = randomUUID();
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(30) }]);
    await db.reclaimDeadline.deleteMany({ where: { companyId: scope } });
    await queues.sync({ domain: DOMAIN, scope });
    expect(await queues.queue(DOMAIN).getJob(deadlineJobId({ domain: DOMAIN, scope }))).toBeUndefined();
  });
});

/** What a job's settlement does with its claim and the deadlines its check computed. */
function settle(
  scope: string,
  claimed: ClaimedDeadline[],
  deadlines: DeadlineRequest[] = [],
  report: { jobId?: string } = {},
) {
  const now = new Date();
  return settleJob(db, {
    claimed,
    deadlines,
    pruneBefore: new Date(0),
    report: {
      jobId: report.jobId ?? `${DOMAIN}--${scope}`,
      domain: DOMAIN,
      scope,
      dryRun: false,
      checked: 0,
      candidates: 0,
      removed: 0,
      candidateBytes: 0,
      reclaimedBytes: 0,
      skipped: {},
      entries: [],
      error: null,
      nextCursor: null,
      cancelled: false,
      startedAt: now,
      finishedAt: now,
    },
  });
}

describe("the ledger claim", () => {
  it("consumes exactly the rows a job saw, and keeps a row requested again while the job ran", async () => {
    const scope = randomUUID();
    const key = { domain: DOMAIN, scope };
    const past = new Date(Date.now() - 1000);
    await queues.request([
      { domain: DOMAIN, scope, reason: "startup", dueAt: past },
      { domain: DOMAIN, scope, reason: "folder_created", dueAt: past },
    ]);
    const claimed = await claimDue(db, key, new Date());
    expect(claimed.map((c) => c.reason).sort()).toEqual(["folder_created", "startup"]);
    // While "the job runs", another folder is created:
    await queues.request([{ domain: DOMAIN, scope, reason: "folder_created", dueAt: new Date() }]);
    await settle(scope, claimed);
    const left = await db.reclaimDeadline.findMany({ where: { companyId: scope } });
    expect(left.map((r) => r.reason)).toEqual(["folder_created"]);
  });

  it("moves a claimed row the job requests again to the new due time, even a later one", async () => {
    const scope = randomUUID();
    await queues.request([
      { domain: DOMAIN, scope, reason: "retention", dueAt: new Date(Date.now() - 1000) },
    ]);
    const claimed = await claimDue(db, { domain: DOMAIN, scope }, new Date());
    await settle(scope, claimed, [{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(60) }]);
    const [row] = await db.reclaimDeadline.findMany({ where: { companyId: scope } });
    expect(Math.abs(row!.dueAt.getTime() - inMinutes(60).getTime())).toBeLessThan(5000);
    expect(row!.version).toBeGreaterThan(claimed[0]!.version);
  });

  it("keeps the earlier due time of a claimed row touched while the job ran that the job requests again", async () => {
    const scope = randomUUID();
    const past = new Date(Date.now() - 1000);
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: past }]);
    const claimed = await claimDue(db, { domain: DOMAIN, scope }, new Date());
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: new Date() }]);
    await settle(scope, claimed, [{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(60) }]);
    const [row] = await db.reclaimDeadline.findMany({ where: { companyId: scope } });
    expect(row!.dueAt.getTime()).toBe(past.getTime());
  });

  it("settles jobs that finish together each with its own claim, deadlines and report, even when one is refused", async () => {
    const scopes = Array.from({ length: 8 }, () => randomUUID());
    const past = new Date(Date.now() - 1000);
    await queues.request(scopes.map((scope) => ({ domain: DOMAIN, scope, reason: "startup", dueAt: past })));
    const claims = await Promise.all(
      scopes.map((scope) => claimDue(db, { domain: DOMAIN, scope }, new Date())),
    );
    // One of them carries a report PostgreSQL refuses (a NUL in a text column).
    const settled = await Promise.allSettled(
      scopes.map((scope, i) =>
        settle(scope, claims[i]!, [{ domain: DOMAIN, scope, reason: "recheck", dueAt: inMinutes(i + 1) }], {
          jobId: i === 3 ? "bad\u0000id" : `${DOMAIN}--${scope}`,
        }),
      ),
    );
    expect(settled.map((s) => s.status)).toEqual(scopes.map((_, i) => (i === 3 ? "rejected" : "fulfilled")));
    for (const [i, scope] of scopes.entries()) {
      const rows = await db.reclaimDeadline.findMany({ where: { companyId: scope } });
      if (i === 3) {
        expect(rows.map((r) => r.reason)).toEqual(["startup"]); // nothing of it was recorded
        continue;
      }
      expect(rows.map((r) => r.reason)).toEqual(["recheck"]);
      const result = (settled[i] as PromiseFulfilledResult<Awaited<ReturnType<typeof settle>>>).value;
      expect(Math.abs(result.keyDue!.getTime() - inMinutes(i + 1).getTime())).toBeLessThan(5000);
      expect(await db.reclaimBatchReport.count({ where: { id: result.report.id, companyId: scope } })).toBe(
        1,
      );
    }
  });

  it("does not claim rows that are not due yet", async () => {
    const scope = randomUUID();
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(10) }]);
    expect(await claimDue(db, { domain: DOMAIN, scope }, new Date())).toEqual([]);
  });
});
