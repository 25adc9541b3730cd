/**
 * The deadline ledger and its BullMQ mirror, against real PostgreSQL and Redis: what is
 * scheduled, when, and that nothing is lost or doubled.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import {
  claimDue,
  createDb,
  createRedis,
  DeadlineQueues,
  deadlineJobId,
  queueName,
  settleJob,
  foldReports,
  settlementValues,
  systemClock,
  DAY_MS,
  type ClaimedDeadline,
  type Db,
  type DeadlineRequest,
  poolOf,
  settlePoolOf,
  sqlFile,
} from "@reclaim/core";
import {
  createTestDatabase,
  deleteKeys,
  planNodes,
  tableScans,
  TEST_REDIS_URL,
  uniquePrefix,
  type TestDatabase,
} from "@reclaim/testkit";

const DOMAIN = "native-workspace-sync";
const LEDGER_SQL = path.join(__dirname, "../src/ledger");
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
  return settleJob(db, {
    claimed,
    deadlines,
    pruneBefore: new Date(0),
    report: { ...emptyReport(report.jobId ?? `${DOMAIN}--${scope}`, new Date()), scope },
  });
}

/** The report row of a job of DOMAIN that looked at nothing. */
function emptyReport(jobId: string, at: Date) {
  return {
    jobId,
    domain: DOMAIN,
    scope: "",
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
    startedAt: at,
    finishedAt: at,
  };
}

/** `n` ledger keys of `domain`, each due a minute ago (one row each); their scopes. */
async function dueBacklog(domain: string, n: number, target: Db = db): Promise<string[]> {
  const scopes = Array.from({ length: n }, () => randomUUID());
  await poolOf(target).query(
    `INSERT INTO reclaim_deadlines (domain, company_id, reason, due_at, version, created_at, updated_at)
     SELECT $1, s, 'event', now() - interval '1 minute', 1, now(), now() FROM unnest($2::text[]) AS s`,
    [domain, scopes],
  );
  return scopes;
}

/** A report row and hourly and daily rollup rows of `domain` for each of `scopes`, none past retention. */
async function reportsAndRollups(domain: string, scopes: string[], target: Db = db): Promise<void> {
  const pool = poolOf(target);
  await pool.query(
    `INSERT INTO reclaim_batch_reports (id, job_id, domain, company_id, dry_run, checked, candidates, removed,
       candidate_bytes, reclaimed_bytes, skipped, entries, started_at, finished_at)
     SELECT gen_random_uuid(), 'seed', $1, s, false, 0, 0, 0, 0, 0, '{}', '[]', now(), now()
       FROM unnest($2::text[]) AS s`,
    [domain, scopes],
  );
  for (const [table, column, unit] of [
    ["reclaim_report_stats", "hour", "hour"],
    ["reclaim_report_stats_daily", "day", "day"],
  ] as const) {
    await pool.query(
      `INSERT INTO ${table} (domain, company_id, ${column}, dry_run, outcome, reason, entries, bytes)
       SELECT $1, s, date_trunc('${unit}', now(), 'UTC'), false, 'removed', '', 1, 1 FROM unnest($2::text[]) AS s`,
      [domain, scopes],
    );
  }
}

/** The settlements of jobs of `domain` that claimed the keys `scopes` (claimed now) and ask for nothing. */
function settlementsOf(target: Db, domain: string, scopes: string[], now = new Date()) {
  return Promise.all(
    scopes.map(async (scope) => ({
      claimed: (await claimDue(target, { domain, scope }, now)).claimed,
      deadlines: [] as DeadlineRequest[],
      pruneBefore: new Date(now.getTime() - DAY_MS),
      report: { ...emptyReport(`${domain}--${scope}`, now), domain, scope },
    })),
  );
}

/** settle-jobs.sql's parameters as SQL literals, for an `EXECUTE` by hand. */
function settlementLiterals(
  client: { escapeLiteral(value: string): string },
  settlements: Parameters<typeof settlementValues>[1],
): string {
  return settlementValues(
    settlements.map(() => randomUUID()),
    settlements,
  )
    .map((v) =>
      typeof v === "number"
        ? String(v)
        : client.escapeLiteral(v instanceof Date ? v.toISOString() : String(v)),
    )
    .join(", ");
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
    const { claimed } = await claimDue(db, key, new Date());
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
    const { claimed } = await claimDue(db, { domain: DOMAIN, scope }, new Date());
    await settle(scope, claimed, [{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(60) }]);
    const [row] = await db.reclaimDeadline.findMany({ where: { companyId: scope } });
    expect(Math.abs(row!.dueAt.getTime() - inMinutes(60).getTime())).toBeLessThan(5000);
    expect(row!.version).toBeGreaterThan(claimed[0]!.version);
  });

  it("keeps the earlier due time of a claimed row touched while the job ran that the job requests again", async () => {
    const scope = randomUUID();
    const past = new Date(Date.now() - 1000);
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: past }]);
    const { claimed } = await claimDue(db, { domain: DOMAIN, scope }, new Date());
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
      scopes.map(async (scope) => (await claimDue(db, { domain: DOMAIN, scope }, new Date())).claimed),
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
      expect(Math.abs(rows[0]!.dueAt.getTime() - inMinutes(i + 1).getTime())).toBeLessThan(5000);
      const result = (settled[i] as PromiseFulfilledResult<Awaited<ReturnType<typeof settle>>>).value;
      expect(await db.reclaimBatchReport.count({ where: { id: result.report.id, companyId: scope } })).toBe(
        1,
      );
    }
  });

  it("plans the settlement and the fold statements once per connection, not on every run (generic plans)", async () => {
    for (let i = 0; i < 8; i++) {
      const scope = randomUUID();
      await queues.request([
        { domain: DOMAIN, scope, reason: "startup", dueAt: new Date(Date.now() - 1000) },
      ]);
      await settle(scope, (await claimDue(db, { domain: DOMAIN, scope }, new Date())).claimed, []);
      await foldReports(db);
    }
    // The settlement pool holds one connection: this query runs in the session that settled.
    const { rows } = await settlePoolOf(db).query<{
      name: string;
      generic_plans: string;
      custom_plans: string;
    }>(
      `SELECT name, generic_plans::text, custom_plans::text FROM pg_prepared_statements
        WHERE name LIKE '%settle-jobs.sql' OR name LIKE '%fold-reports.sql' ORDER BY name`,
    );
    expect(rows.map((r) => path.basename(r.name))).toEqual(["fold-reports.sql", "settle-jobs.sql"]);
    for (const row of rows) {
      expect(Number(row.custom_plans)).toBe(0);
      expect(Number(row.generic_plans)).toBeGreaterThanOrEqual(8);
    }
  });

  it("settles and folds by reading only the rows they settle and fold, however large the ledger, the reports and the rollups grow (no scan, custom or generic plan)", async () => {
    // A ledger of 3,000 keys due, and reports and rollup rows of the domain, none of them past
    // retention: a settlement must find its claims, its prunes and its key's next deadline by
    // index, never by reading these tables through.
    const domain = `settle-scan-${randomUUID()}`;
    const scopes = await dueBacklog(domain, 3000);
    await reportsAndRollups(domain, scopes);
    const pool = poolOf(db);
    await pool.query(
      "ANALYZE reclaim_deadlines, reclaim_batch_reports, reclaim_report_stats, reclaim_report_stats_daily",
    );
    // What other tests left unfolded is folded now: each fold below takes its own two reports.
    await foldReports(db);
    const client = await pool.connect();
    try {
      for (const [mode, mine] of [
        ["force_custom_plan", scopes.slice(0, 2)],
        ["force_generic_plan", scopes.slice(2, 4)],
      ] as const) {
        await client.query(`SET plan_cache_mode = ${mode}`);
        const settlements = await settlementsOf(db, domain, mine);
        // One job asks for a later deadline of its own key, one leaves nothing due.
        settlements[0]!.deadlines.push({ domain, scope: mine[0]!, reason: "recheck", dueAt: inMinutes(5) });
        expect(settlements.map((s) => s.claimed.length)).toEqual([1, 1]);
        await client.query(
          `PREPARE settle_plan (jsonb, jsonb, timestamptz) AS ${sqlFile(LEDGER_SQL, "settle-jobs.sql")}`,
        );
        const { rows } = await client.query<{ "QUERY PLAN": unknown }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE settle_plan (${settlementLiterals(client, settlements)})`,
        );
        await client.query("DEALLOCATE settle_plan");
        const large = tableScans(rows).filter(([, , read]) => read > 4);
        expect({ mode, large }).toEqual({ mode, large: [] });
        // What it did, all by index: claims consumed (one moved to its new due time), two rows stored.
        const left = await pool.query<{ company_id: string; reason: string }>(
          "SELECT company_id, reason FROM reclaim_deadlines WHERE domain = $1 AND company_id = ANY($2)",
          [domain, mine],
        );
        expect(left.rows).toEqual([{ company_id: mine[0], reason: "recheck" }]);
        // The fold of the two reports: found by the key of the unfolded ones, prunes and rollup
        // rows by their indexes.
        await client.query(
          `PREPARE fold_plan (int, int, int, int, int) AS ${sqlFile(LEDGER_SQL, "fold-reports.sql")}`,
        );
        const { rows: fold } = await client.query<{ "QUERY PLAN": unknown }>(
          "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE fold_plan (1000, 0, 400, 200, 20)",
        );
        await client.query("DEALLOCATE fold_plan");
        expect({ mode, large: tableScans(fold).filter(([, , read]) => read > 4) }).toEqual({
          mode,
          large: [],
        });
        expect(await db.reclaimReportUnfolded.count()).toBe(0);
      }
    } finally {
      await client.query("RESET plan_cache_mode");
      client.release();
      for (const table of [
        "reclaim_deadlines",
        "reclaim_batch_reports",
        "reclaim_report_stats",
        "reclaim_report_stats_daily",
        "reclaim_report_totals",
      ])
        await pool.query(`DELETE FROM ${table} WHERE domain = $1`, [domain]);
    }
  });

  it("does not claim rows that are not due yet", async () => {
    const scope = randomUUID();
    await queues.request([{ domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(10) }]);
    expect((await claimDue(db, { domain: DOMAIN, scope }, new Date())).claimed).toEqual([]);
  });

  it("reads only the claimed key's rows, however many keys of its domain are due (no scan of the domain's backlog)", async () => {
    // 3,000 keys of one domain due now, as after a burst of events, of a domain the table's
    // statistics have not seen yet.
    const domain = `backlog-${randomUUID()}`;
    const scopes = await dueBacklog(domain, 3000);
    const pool = poolOf(db);
    const client = await pool.connect();
    try {
      for (const mode of ["force_custom_plan", "force_generic_plan"]) {
        await client.query(`SET plan_cache_mode = ${mode}`);
        for (const [file, params] of [
          ["lock-and-claim.sql", "('ns', $1, $2, $1, now())"],
          ["claim-due.sql", "($2, $1, now())"],
        ] as const) {
          const name = `claim_plan_${file.replace(/\W/g, "_")}`;
          const types =
            file === "claim-due.sql" ? "text, text, timestamptz" : "text, text, text, text, timestamptz";
          await client.query(`PREPARE ${name} (${types}) AS ${sqlFile(LEDGER_SQL, file)}`);
          const { rows } = await client.query<{ "QUERY PLAN": unknown }>(
            `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name} ${params.replace(/\$1/g, `'${scopes[1500]}'`).replace(/\$2/g, `'${domain}'`)}`,
          );
          await client.query(`DEALLOCATE ${name}`);
          const scans = planNodes(rows).filter((n) => n["Relation Name"] === "reclaim_deadlines");
          expect({
            mode,
            file,
            scans: scans.map((n) => [n["Index Name"], n["Actual Rows"], n["Rows Removed by Filter"] ?? 0]),
          }).toEqual({
            mode,
            file,
            scans: [["reclaim_deadlines_pkey", 1, 0]],
          });
        }
      }
    } finally {
      await client.query("RESET plan_cache_mode");
      client.release();
      await pool.query("DELETE FROM reclaim_deadlines WHERE domain = $1", [domain]);
    }
  });
});

describe("plans made while the tables were empty (a young database)", () => {
  // A connection keeps a generic plan until something invalidates it. Planned on a young
  // database, whose tables are empty and have never been analyzed, a table scan looks
  // cheapest; it would read the whole table on every run once the table had grown.
  let young: TestDatabase;
  let youngDb: Db;
  beforeEach(async () => {
    young = await createTestDatabase();
    youngDb = createDb(young.url);
  });
  afterEach(async () => {
    await youngDb.$disconnect();
    await young.drop();
  });

  it("the settlement connection never plans a table scan: its plans from the first settlement and fold read only the rows they settle and fold once the tables have grown", async () => {
    const domain = `young-${randomUUID()}`;
    // The first settlement and fold of the process prepare and plan their statements, on empty tables.
    await settleJob(youngDb, (await settlementsOf(youngDb, domain, [randomUUID()]))[0]!);
    await foldReports(youngDb);
    const scopes = await dueBacklog(domain, 3000, youngDb);
    await reportsAndRollups(domain, scopes, youngDb);
    const settlements = await settlementsOf(youngDb, domain, scopes.slice(0, 2));
    expect(settlements.map((s) => s.claimed.length)).toEqual([1, 1]);
    /** EXPLAIN ANALYZE of the cached statement `file` on the settlement's one connection, undone. */
    const explainCached = async (file: string, literals: (client: pg.PoolClient) => string) => {
      const client = await settlePoolOf(youngDb).connect();
      try {
        const { rows: prepared } = await client.query<{ name: string }>(
          "SELECT name FROM pg_prepared_statements WHERE name LIKE $1",
          [`%${file}`],
        );
        expect(prepared).toHaveLength(1);
        await client.query("BEGIN");
        const { rows } = await client.query<{ "QUERY PLAN": unknown }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE "${prepared[0]!.name}" (${literals(client)})`,
        );
        await client.query("ROLLBACK");
        return tableScans(rows);
      } finally {
        client.release();
      }
    };
    const settling = await explainCached("settle-jobs.sql", (client) =>
      settlementLiterals(client, settlements),
    );
    expect(settling.filter(([, , read]) => read > 4)).toEqual([]);
    // Settled for real: the fold has their two reports to take.
    await Promise.all(settlements.map((s) => settleJob(youngDb, s)));
    const folding = await explainCached("fold-reports.sql", () => "1000, 0, 400, 200, 20");
    expect(folding.filter(([, , read]) => read > 4)).toEqual([]);
    // The two reports, by the key of the unfolded ones.
    const unfolded = folding.filter(([table]) => table === "reclaim_reports_unfolded");
    expect(unfolded.length).toBeGreaterThan(0);
    for (const [, type, read] of unfolded)
      expect([type, read]).toEqual([expect.not.stringContaining("Seq"), 2]);
  });

  it("a sync reads each key's earliest deadline by the primary key, under a plan made while the ledger was empty", async () => {
    const domain = `young-${randomUUID()}`;
    const client = await poolOf(youngDb).connect();
    try {
      await client.query("SET plan_cache_mode = force_generic_plan");
      await client.query(`PREPARE earliest (text[], text[]) AS ${sqlFile(LEDGER_SQL, "earliest-due.sql")}`);
      await client.query("EXECUTE earliest ('{}', '{}')");
      const scopes = await dueBacklog(domain, 3000, youngDb);
      const asked = [scopes[10]!, scopes[20]!, randomUUID()];
      const keys = `${client.escapeLiteral(`{${asked.map(() => domain).join(",")}}`)}, ${client.escapeLiteral(`{${asked.join(",")}}`)}`;
      const { rows } = await client.query<{ "QUERY PLAN": unknown }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE earliest (${keys})`,
      );
      // One lookup per key asked for (EXPLAIN rounds each lookup's rows: at most one each).
      const scans = tableScans(rows);
      expect(scans.map(([table, type]) => [table, type])).toEqual([["reclaim_deadlines", "Index Scan"]]);
      expect(scans[0]![2]).toBeLessThanOrEqual(asked.length);
      const { rows: due } = await client.query<{ scope: string }>(`EXECUTE earliest (${keys})`);
      expect(due.map((r) => r.scope).sort()).toEqual([scopes[10], scopes[20]].sort());
    } finally {
      await client.query("DEALLOCATE ALL; RESET plan_cache_mode");
      client.release();
    }
  });
});
