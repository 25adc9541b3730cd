/**
 * The rollup's day rows (reclaim_report_stats_daily): every stored report's entries are added to
 * its hour's rows and its UTC day's rows by the fold that takes its figures (fold-reports.sql), and the
 * console's aggregates (`domainTotals`, `outcomeSeries`) read whole days from the day rows and
 * only partial days and hour buckets from the hourly rows, with the same figures as summing the
 * hourly rows alone: checked at every hour of a day, per company, for every company and per
 * domain. Real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import {
  DAY_MS,
  domainTotals,
  emptyWindow,
  foldReports,
  outcomeSeries,
  settleJob,
  STATS_RETENTION_DAYS,
  STATS_WINDOWS,
  type Db,
  type DomainTotals,
  type StatsFilter,
} from "@reclaim/core";
import { fileDatabase } from "@reclaim/testkit";
import { reportOf, seedReport } from "@reclaim/testkit/src/fixtures/reports";

const HOUR_MS = 3_600_000;
const NWS = "native-workspace-sync";
const SVC = "skill-version-caches";
const DOMAINS = [NWS, SVC];
const A = randomUUID();
const B = randomUUID();
/** The reports of the aggregate tests: every 5 hours from two days after this back 36 days. */
const T0 = Date.parse("2026-12-10T00:00:00Z");

const file = fileDatabase();
let db: Db;
beforeAll(() => (db = file.db()));

type Row = { company_id: string; at: Date; outcome: string; entries: bigint; bytes: bigint };
/** The rollup rows of `domain` and `companies`, every stored report folded in first. */
async function rowsOf(table: "hour" | "day", domain: string, companies: string[]): Promise<Row[]> {
  await foldReports(db);
  return db.$queryRawUnsafe<Row[]>(
    table === "hour"
      ? `SELECT company_id, hour AS at, outcome, entries, bytes FROM reclaim_report_stats
          WHERE domain = $1 AND company_id = ANY($2) ORDER BY company_id, at, outcome`
      : `SELECT company_id, day AS at, outcome, entries, bytes FROM reclaim_report_stats_daily
          WHERE domain = $1 AND company_id = ANY($2) ORDER BY company_id, at, outcome`,
    domain,
    companies,
  );
}

describe("day rows", () => {
  it("a report's figures are in its hour's rows and its day's rows, for its company and for every company", async () => {
    const domain = `days-${randomUUID()}`;
    const scope = randomUUID();
    for (const [at, bytes] of [
      ["2026-11-03T01:10:00Z", 100],
      ["2026-11-03T22:50:00Z", 20],
      ["2026-11-04T00:00:00Z", 3],
    ] as const) {
      await seedReport(db, {
        domain,
        companyId: scope,
        finishedAt: new Date(at),
        entries: [{ id: at, outcome: "removed", bytes }],
      });
    }
    const removed = (company: string, at: string, bytes: number, entries = 1) => ({
      company_id: company,
      at: new Date(at),
      outcome: "removed",
      entries: BigInt(entries),
      bytes: BigInt(bytes),
    });
    const hours = [
      ["2026-11-03T01:00:00Z", 100],
      ["2026-11-03T22:00:00Z", 20],
      ["2026-11-04T00:00:00Z", 3],
    ] as const;
    expect(await rowsOf("hour", domain, [scope, "*"])).toEqual(
      ["*", scope].flatMap((company) => hours.map(([at, bytes]) => removed(company, at, bytes))),
    );
    expect(await rowsOf("day", domain, [scope, "*"])).toEqual(
      ["*", scope].flatMap((company) => [
        removed(company, "2026-11-03T00:00:00Z", 120, 2),
        removed(company, "2026-11-04T00:00:00Z", 3),
      ]),
    );
  });

  it("a report PostgreSQL refuses is in neither the hourly nor the day rows: nothing of it is left to fold", async () => {
    const domain = `days-${randomUUID()}`;
    const report = reportOf({
      domain,
      companyId: A,
      finishedAt: new Date(T0),
      entries: [{ id: "r", outcome: "removed", bytes: 5 }],
    });
    const settled = settleJob(db, {
      claimed: [],
      deadlines: [],
      pruneBefore: new Date(0),
      report: { ...report, jobId: "refused\u0000" }, // no NUL in text: the whole statement is refused
    });
    await expect(settled).rejects.toThrow();
    await foldReports(db);
    expect(await db.reclaimReportStat.count({ where: { domain } })).toBe(0);
    expect(await db.reclaimReportDailyStat.count({ where: { domain } })).toBe(0);
    await settleJob(db, { claimed: [], deadlines: [], pruneBefore: new Date(0), report });
    await foldReports(db);
    expect(await db.reclaimReportStat.count({ where: { domain } })).toBe(2);
    expect(await db.reclaimReportDailyStat.count({ where: { domain } })).toBe(2);
  });

  it(`day rows whose whole day is older than ${STATS_RETENTION_DAYS} days are pruned as reports are folded`, async () => {
    const domain = `days-${randomUUID()}`;
    const finishedAt = new Date(T0 + 12 * HOUR_MS);
    const cutoff = finishedAt.getTime() - STATS_RETENTION_DAYS * DAY_MS;
    const cutoffDay = new Date(Math.floor(cutoff / DAY_MS) * DAY_MS);
    const before = new Date(cutoffDay.getTime() - DAY_MS);
    for (const day of [before, cutoffDay]) {
      await db.reclaimReportDailyStat.create({
        data: { domain, companyId: B, day, dryRun: false, outcome: "removed", entries: 1n, bytes: 1n },
      });
    }
    await seedReport(db, { domain, companyId: A, finishedAt, entries: [{ id: "x", outcome: "removed" }] });
    await foldReports(db);
    const left = await db.reclaimReportDailyStat.findMany({ where: { domain, companyId: B } });
    expect(left.map((r) => r.day)).toEqual([cutoffDay]);
  });
});

describe("aggregates read from day rows equal those summed from the hourly rows", () => {
  beforeAll(async () => {
    for (let i = 0; T0 + 2 * DAY_MS - i * 5 * HOUR_MS > T0 - 36 * DAY_MS; i += 1) {
      const finishedAt = new Date(T0 + 2 * DAY_MS - i * 5 * HOUR_MS - (i % 60) * 60_000);
      const companyId = [A, B, null][i % 3]!;
      await seedReport(db, {
        domain: DOMAINS[i % 2]!,
        companyId,
        dryRun: i % 7 === 0,
        finishedAt,
        entries: [
          { id: `c${i}`, outcome: "candidate", bytes: 3 * i },
          { id: `r${i}`, outcome: "removed", bytes: 10 * (i + 1) },
          { id: `s${i}`, outcome: "skipped", reason: ["pinned", "recent", "grace"][i % 3]! },
          ...(i % 4 === 0 ? [{ id: `f${i}`, outcome: "failed" as const, reason: "rename_failed" }] : []),
          // Instance-wide work names the company of some entries.
          ...(companyId === null
            ? [{ id: `b${i}`, outcome: "removed" as const, bytes: 7, companyId: B }]
            : []),
        ],
      });
    }
  });

  const FILTERS: StatsFilter[] = [{}, { scope: A }, { scope: B }, { scope: "instance" }, { domain: NWS }];

  /** The 24 h / 7 d / 30 d windows summed from the hourly rows alone. */
  async function hourlyTotals(filter: StatsFilter, now: Date): Promise<DomainTotals[]> {
    const hour = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS;
    const rows = await db.$queryRawUnsafe<
      { domain: string; outcome: string; dry_run: boolean; window: string; entries: bigint; bytes: bigint }[]
    >(
      `SELECT domain, outcome, dry_run, w.name AS window, sum(entries)::bigint AS entries, sum(bytes)::bigint AS bytes
         FROM reclaim_report_stats,
              (VALUES ('24h', 24), ('7d', 168), ('30d', 720)) AS w(name, hours)
        WHERE hour > $1::timestamptz - w.hours * interval '1 hour'
          AND company_id = $2 AND ($3::text IS NULL OR domain = $3)
        GROUP BY 1, 2, 3, 4`,
      new Date(hour),
      filter.scope ?? "*",
      filter.domain ?? null,
    );
    const domains = filter.domain ? [filter.domain] : DOMAINS;
    return domains.map((domain) => {
      const windows = { "24h": emptyWindow(), "7d": emptyWindow(), "30d": emptyWindow() };
      for (const r of rows.filter((row) => row.domain === domain)) {
        const w = windows[r.window as keyof typeof windows];
        const [entries, bytes] = [Number(r.entries), Number(r.bytes)];
        if (r.outcome === "removed")
          [w.removed, w.reclaimedBytes] = [w.removed + entries, w.reclaimedBytes + bytes];
        if (r.outcome === "skipped") w.kept += entries;
        if (r.outcome === "failed") w.failed += entries;
        if (r.outcome === "candidate" && r.dry_run) {
          [w.dryRunCandidates, w.dryRunCandidateBytes] = [
            w.dryRunCandidates + entries,
            w.dryRunCandidateBytes + bytes,
          ];
        } else if (r.outcome === "candidate") {
          [w.candidates, w.candidateBytes] = [w.candidates + entries, w.candidateBytes + bytes];
        }
      }
      return { domain, windows };
    });
  }

  /** Non-zero (series key, bucket) -> [entries, bytes] of one outcome, summed from the hourly rows. */
  async function hourlySeries(
    outcome: string,
    by: "domain" | "reason",
    bucket: "hour" | "day",
    from: Date,
    to: Date,
    filter: StatsFilter,
  ): Promise<Map<string, [number, number]>> {
    const rows = await db.$queryRawUnsafe<{ key: string; bucket: Date; entries: bigint; bytes: bigint }[]>(
      `SELECT CASE WHEN $2 = 'reason' THEN reason ELSE domain END AS key,
              date_trunc($3, hour, 'UTC') AS bucket, sum(entries)::bigint AS entries, sum(bytes)::bigint AS bytes
         FROM reclaim_report_stats
        WHERE outcome = $1 AND hour >= date_trunc($3, $4::timestamptz, 'UTC') AND hour < $5
          AND company_id = $6 AND ($7::text IS NULL OR domain = $7)
        GROUP BY 1, 2`,
      outcome,
      by,
      bucket,
      from,
      to,
      filter.scope ?? "*",
      filter.domain ?? null,
    );
    return new Map(
      rows
        .filter((r) => r.entries > 0n)
        .map((r) => [`${r.key} ${r.bucket.toISOString()}`, [Number(r.entries), Number(r.bytes)]]),
    );
  }

  it("the 24 h / 7 d / 30 d totals, at every hour of the day", async () => {
    for (let h = 0; h < 24; h += 1) {
      const now = new Date(T0 - DAY_MS + h * HOUR_MS + 17 * 60_000);
      for (const filter of FILTERS) {
        const domains = filter.domain ? [filter.domain] : DOMAINS;
        const got = await domainTotals(db, domains, filter, now);
        expect({ now, filter, totals: got }).toEqual({
          now,
          filter,
          totals: await hourlyTotals(filter, now),
        });
      }
    }
    // The data is not trivial: each window differs.
    const all = await domainTotals(db, DOMAINS, {}, new Date(T0 - 5 * HOUR_MS));
    const bytes = STATS_WINDOWS.map((w) => all[0]!.windows[w].reclaimedBytes);
    expect(new Set(bytes).size).toBe(3);
  });

  it("day series (ranges ending inside a day or at midnight) and hour series", async () => {
    for (const h of [0, 1, 11, 23]) {
      const now = new Date(T0 - DAY_MS + h * HOUR_MS + 17 * 60_000);
      const ranges = [
        { bucket: "day" as const, from: new Date(now.getTime() - 30 * DAY_MS), to: now },
        { bucket: "day" as const, from: new Date(now.getTime() - 30 * DAY_MS), to: new Date(T0) },
        { bucket: "day" as const, from: new Date(now.getTime() - HOUR_MS), to: now },
        { bucket: "hour" as const, from: new Date(now.getTime() - 2 * DAY_MS), to: now },
      ];
      for (const filter of FILTERS) {
        for (const range of ranges) {
          for (const [outcome, by] of [
            ["removed", "domain"],
            ["skipped", "reason"],
          ] as const) {
            const result = await outcomeSeries(db, { outcome, by, ...filter, ...range });
            const got = new Map<string, [number, number]>();
            for (const s of result.series) {
              s.entries.forEach((entries, i) => {
                if (entries > 0) got.set(`${s.key} ${result.buckets[i]}`, [entries, s.bytes[i]!]);
              });
            }
            const expected = await hourlySeries(outcome, by, range.bucket, range.from, range.to, filter);
            expect({ filter, range, outcome, series: got }).toEqual({
              filter,
              range,
              outcome,
              series: expected,
            });
          }
        }
      }
    }
  });
});
