/**
 * Benchmark: the console's aggregate queries (GET /v1/stats/*, packages/core/src/stats) over
 * 1,000,000 report rows holding 10,000,000 entries, against the same figures summed from the
 * report rows themselves (what answering without the rollup would take), in the same run.
 * Target: every aggregate's p95 under 100 ms.
 *
 *   npx tsx bench/console/stats.ts [--reports 1000000] [--companies 300] [--runs 100] [--baseline-runs 5]
 *                                  [--keep [--rebuild]]
 *
 * --keep seeds a database named after the dataset's size once and leaves it in place: a later
 * run with --keep reuses its reports, companies and "now" (pending migrations applied), so
 * the figures are comparable; --rebuild rebuilds the rollup from the reports by the migrations.
 *
 * Data: reports spread evenly over the last 720 hours, four domains, `companies` companies and
 * the instance scope (every 50th report); each report holds 10 entries (4 removed with bytes, 1
 * candidate, 4 kept with one of 8 reasons, 1 failed). The rollup is built from the stored
 * reports by the committed migrations themselves (their backfill of existing reports: the
 * same sums the report transaction adds one report at a time), and checked against the
 * baseline's figures before anything is timed. Measured through the functions the routes call
 * (Prisma, the same SQL files), in rounds of every aggregate in turn after warm-up, beside the
 * floor of a Prisma `SELECT 1` under the machine's load; the baseline runs a few times only.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { createDb, domainTotals, hourOf, outcomeSeries, type Db } from "../../packages/core/src";
import { numberArg, percentiles } from "../restore-points/dataset";
import { benchEnv, report, time } from "../support";

const REPORTS = numberArg("reports", 1_000_000);
const COMPANIES = numberArg("companies", 300);
const RUNS = numberArg("runs", 100);
const BASELINE_RUNS = numberArg("baseline-runs", 5);
const KEEP = process.argv.includes("--keep");
const REBUILD = process.argv.includes("--rebuild");
const DOMAINS = [
  "native-workspace-sync",
  "skill-version-caches",
  "native-session-backups",
  "restore-point-retention",
];
const REASONS = [
  "run_active",
  "lease_active",
  "pinned",
  "recent",
  "folder_changed",
  "source_unavailable",
  "still_used",
  "grace",
];
const MIGRATIONS = path.resolve(__dirname, "../../prisma/migrations");
const CHUNK = 100_000;
const DAY_MS = 86_400_000;

const ENTRIES_SQL = `jsonb_build_array(
  jsonb_build_object('id', 'r' || i || '-0', 'outcome', 'removed', 'bytes', 4096 * (1 + i % 7)),
  jsonb_build_object('id', 'r' || i || '-1', 'outcome', 'removed', 'bytes', 8192),
  jsonb_build_object('id', 'r' || i || '-2', 'outcome', 'removed', 'bytes', 512 * (i % 3)),
  jsonb_build_object('id', 'r' || i || '-3', 'outcome', 'removed', 'bytes', 65536),
  jsonb_build_object('id', 'r' || i || '-4', 'outcome', 'candidate', 'bytes', 1024),
  jsonb_build_object('id', 'r' || i || '-5', 'outcome', 'skipped', 'reason', reasons[1 + i % 8]),
  jsonb_build_object('id', 'r' || i || '-6', 'outcome', 'skipped', 'reason', reasons[1 + (i + 1) % 8]),
  jsonb_build_object('id', 'r' || i || '-7', 'outcome', 'skipped', 'reason', reasons[1 + (i + 3) % 8]),
  jsonb_build_object('id', 'r' || i || '-8', 'outcome', 'skipped', 'reason', reasons[1 + (i + 3) % 8], 'bytes', 100),
  jsonb_build_object('id', 'r' || i || '-9', 'outcome', 'failed', 'reason', 'rename_failed'))`;

async function seed(client: pg.Client, now: Date, companies: string[]): Promise<void> {
  for (let from = 0; from < REPORTS; from += CHUNK) {
    await client.query(
      `INSERT INTO reclaim_batch_reports
         (job_id, domain, company_id, dry_run, checked, candidates, removed, candidate_bytes, reclaimed_bytes,
          skipped, entries, started_at, finished_at)
       SELECT 'bench', ($3::text[])[1 + i % 4],
              CASE WHEN i % 50 = 0 THEN 'instance' ELSE ($4::text[])[1 + (i / 4) % $5::int] END,
              false, 10, 1, 4, 1024, 4096 * (1 + i % 7) + 8192 + 512 * (i % 3) + 65536,
              (SELECT jsonb_object_agg(k, n)
                 FROM (SELECT k, count(*) AS n
                         FROM unnest(ARRAY[reasons[1 + i % 8], reasons[1 + (i + 1) % 8], reasons[1 + (i + 3) % 8],
                                           reasons[1 + (i + 3) % 8], 'rename_failed']) AS k
                        GROUP BY k) AS z),
              ${ENTRIES_SQL}, t - interval '2 seconds', t
         FROM generate_series($1::int, $2::int) AS g(i),
              LATERAL (SELECT $6::timestamptz - (i % 719) * interval '1 hour' - (i % 3000) * interval '1 second' AS t) AS w,
              LATERAL (SELECT $7::text[] AS reasons) AS r`,
      [from, Math.min(from + CHUNK, REPORTS) - 1, DOMAINS, companies, companies.length, now, REASONS],
    );
    process.stdout.write(`  seeded ${Math.min(from + CHUNK, REPORTS)} reports\n`);
  }
}

/** The rollup as the committed migrations build it from stored reports. */
async function buildRollup(client: pg.Client): Promise<void> {
  const dirs = [
    "20261205030000_report_stats",
    "20261205030100_report_stats_all_companies",
    "20261205030200_report_stats_daily",
  ];
  await client.query("DROP TABLE reclaim_report_stats, reclaim_report_stats_daily");
  for (const dir of dirs)
    await client.query(readFileSync(path.join(MIGRATIONS, dir, "migration.sql"), "utf8"));
  await client.query("VACUUM ANALYZE reclaim_report_stats");
  await client.query("VACUUM ANALYZE reclaim_report_stats_daily");
  await client.query("VACUUM ANALYZE reclaim_batch_reports");
}

interface Dataset {
  now: Date;
  companies: string[];
}

/** The dataset a previous --keep run finished seeding, if any. */
async function keptDataset(client: pg.Client): Promise<Dataset | null> {
  await client.query(
    "CREATE TABLE IF NOT EXISTS bench_console_dataset (now timestamptz NOT NULL, companies text[] NOT NULL)",
  );
  const { rows } = await client.query<Dataset>("SELECT now, companies FROM bench_console_dataset");
  return rows[0] ?? null;
}

interface Aggregate {
  name: string;
  rollup: () => Promise<unknown>;
  baseline: () => Promise<unknown>;
}

function aggregates(db: Db, client: pg.Client, now: Date, company: string): Aggregate[] {
  const hour = hourOf(now);
  const to = now;
  const from30 = new Date(now.getTime() - 30 * DAY_MS);
  const from48h = new Date(now.getTime() - 2 * DAY_MS);
  const domain = DOMAINS[0]!;
  const windowSql = (where: string, params: unknown[]) => () =>
    client.query(
      `SELECT domain,
              sum(reclaimed_bytes) FILTER (WHERE date_trunc('hour', finished_at) > $1::timestamptz - interval '24 hours'),
              sum(reclaimed_bytes) FILTER (WHERE date_trunc('hour', finished_at) > $1::timestamptz - interval '168 hours'),
              sum(reclaimed_bytes), sum(removed), sum(candidates), sum(candidate_bytes),
              sum((SELECT COALESCE(sum(v::bigint), 0) FROM jsonb_each_text(skipped) AS k(key, v)))
         FROM reclaim_batch_reports
        WHERE date_trunc('hour', finished_at) > $1::timestamptz - interval '720 hours' ${where}
        GROUP BY domain`,
      [hour, ...params],
    );
  const seriesSql = (bucket: string, from: Date, where: string, params: unknown[]) => () =>
    client.query(
      `SELECT domain, date_trunc('${bucket}', finished_at, 'UTC') AS b, sum(removed), sum(reclaimed_bytes)
         FROM reclaim_batch_reports
        WHERE finished_at >= $1 AND finished_at < $2 ${where}
        GROUP BY 1, 2`,
      [from, to, ...params],
    );
  const skipsSql = (where: string, params: unknown[]) => () =>
    client.query(
      `SELECT k.key, date_trunc('day', finished_at, 'UTC') AS b, sum(k.value::bigint)
         FROM reclaim_batch_reports, jsonb_each_text(skipped) AS k
        WHERE finished_at >= $1 AND finished_at < $2 ${where}
        GROUP BY 1, 2`,
      [from30, to, ...params],
    );
  return [
    {
      name: "totals 24h/7d/30d, every domain",
      rollup: () => domainTotals(db, DOMAINS, {}, now),
      baseline: windowSql("", []),
    },
    {
      name: "reclaimed per domain, 30 day buckets",
      rollup: () => outcomeSeries(db, { outcome: "removed", by: "domain", bucket: "day", from: from30, to }),
      baseline: seriesSql("day", from30, "", []),
    },
    {
      name: "skips per reason, 30 day buckets",
      rollup: () => outcomeSeries(db, { outcome: "skipped", by: "reason", bucket: "day", from: from30, to }),
      baseline: skipsSql("", []),
    },
    {
      name: "reclaimed per domain, 48 hour buckets",
      rollup: () =>
        outcomeSeries(db, { outcome: "removed", by: "domain", bucket: "hour", from: from48h, to }),
      baseline: seriesSql("hour", from48h, "", []),
    },
    {
      name: "totals, one company",
      rollup: () => domainTotals(db, DOMAINS, { scope: company }, now),
      baseline: windowSql("AND company_id = $2", [company]),
    },
    {
      name: "reclaimed, one company, 30 day buckets",
      rollup: () =>
        outcomeSeries(db, {
          outcome: "removed",
          by: "domain",
          bucket: "day",
          from: from30,
          to,
          scope: company,
        }),
      baseline: seriesSql("day", from30, "AND company_id = $3", [company]),
    },
    {
      name: "skips, one company, 30 day buckets",
      rollup: () =>
        outcomeSeries(db, {
          outcome: "skipped",
          by: "reason",
          bucket: "day",
          from: from30,
          to,
          scope: company,
        }),
      baseline: skipsSql("AND company_id = $3", [company]),
    },
    {
      name: "totals, one domain",
      rollup: () => domainTotals(db, [domain], { domain }, now),
      baseline: windowSql("AND domain = $2", [domain]),
    },
    {
      name: "skips, one domain, 30 day buckets",
      rollup: () =>
        outcomeSeries(db, { outcome: "skipped", by: "reason", bucket: "day", from: from30, to, domain }),
      baseline: skipsSql("AND domain = $3", [domain]),
    },
  ];
}

/** The rollup's figures (each window, and the day series) equal those summed from the report rows. */
async function check(db: Db, client: pg.Client, now: Date, company: string): Promise<void> {
  for (const scope of [undefined, company]) {
    const totals = await domainTotals(db, DOMAINS, { scope }, now);
    const windowHours = { "24h": 24, "7d": 168, "30d": 720 } as const;
    for (const [window, hours] of Object.entries(windowHours) as [keyof typeof windowHours, number][]) {
      const { rows } = await client.query(
        `SELECT domain, sum(reclaimed_bytes)::bigint AS bytes, sum(removed)::bigint AS removed
           FROM reclaim_batch_reports
          WHERE date_trunc('hour', finished_at) > $1::timestamptz - $3::int * interval '1 hour'
            AND ($2::text IS NULL OR company_id = $2::text)
          GROUP BY domain`,
        [hourOf(now), scope ?? null, hours],
      );
      for (const t of totals) {
        const row = rows.find((r: { domain: string }) => r.domain === t.domain);
        const expected = [Number(row?.bytes ?? 0), Number(row?.removed ?? 0)];
        const got = [t.windows[window].reclaimedBytes, t.windows[window].removed];
        if (expected.join() !== got.join()) {
          throw new Error(
            `rollup differs for ${t.domain} ${scope ?? "*"} ${window}: ${got.join()} vs ${expected.join()}`,
          );
        }
      }
    }
    const from = new Date(now.getTime() - 30 * DAY_MS);
    const series = await outcomeSeries(db, {
      outcome: "removed",
      by: "domain",
      bucket: "day",
      from,
      to: now,
      scope,
    });
    const { rows } = await client.query(
      `SELECT domain, date_trunc('day', finished_at, 'UTC') AS day, sum(reclaimed_bytes)::bigint AS bytes
         FROM reclaim_batch_reports
        WHERE finished_at >= date_trunc('day', $1::timestamptz, 'UTC')
          AND date_trunc('hour', finished_at, 'UTC') < $2
          AND ($3::text IS NULL OR company_id = $3::text)
        GROUP BY 1, 2`,
      [from, now, scope ?? null],
    );
    const got = series.series.reduce((sum, s) => sum + s.bytes.reduce((a, b) => a + b, 0), 0);
    const expected = rows.reduce((sum: number, r: { bytes: string }) => sum + Number(r.bytes), 0);
    if (got !== expected) throw new Error(`day series sum differs ${scope ?? "*"}: ${got} vs ${expected}`);
    for (const r of rows as { domain: string; day: Date; bytes: string }[]) {
      const bucket = series.buckets.indexOf(r.day.toISOString());
      const value = series.series.find((s) => s.key === r.domain)?.bytes[bucket];
      if (value !== Number(r.bytes)) {
        throw new Error(
          `day series differs for ${r.domain} ${scope ?? "*"} ${r.day.toISOString()}: ${value} vs ${r.bytes}`,
        );
      }
    }
  }
}

const fmt = (n: string | undefined) => Number(n).toLocaleString("en-US");

async function measure(fn: () => Promise<unknown>, runs: number, warmups: number): Promise<number[]> {
  for (let i = 0; i < warmups; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) samples.push((await time(fn)).ms);
  return samples;
}

async function main(): Promise<void> {
  const env = await benchEnv(KEEP ? { keep: `reclaim_bench_console_stats_${REPORTS}_${COMPANIES}` } : {});
  const client = new pg.Client({ connectionString: env.databaseUrl });
  await client.connect();
  const db = createDb(env.databaseUrl, { max: 2 });
  try {
    const kept = await keptDataset(client);
    const { now, companies } = kept ?? {
      now: new Date(),
      companies: Array.from({ length: COMPANIES }, () => randomUUID()),
    };
    let seeded = { ms: 0 };
    let built = { ms: 0 };
    if (!kept) {
      await client.query("TRUNCATE reclaim_batch_reports");
      seeded = await time(() => seed(client, now, companies));
    }
    if (!kept || REBUILD) built = await time(() => buildRollup(client));
    if (!kept && KEEP) {
      await client.query("INSERT INTO bench_console_dataset (now, companies) VALUES ($1, $2)", [
        now,
        companies,
      ]);
    }
    const counts = await client.query(
      `SELECT (SELECT count(*) FROM reclaim_batch_reports) AS reports,
              (SELECT sum(jsonb_array_length(entries)) FROM reclaim_batch_reports) AS entries,
              (SELECT count(*) FROM reclaim_report_stats) AS stats_rows,
              (SELECT count(*) FROM reclaim_report_stats WHERE company_id = '*') AS all_rows,
              (SELECT count(*) FROM reclaim_report_stats_daily) AS day_rows,
              (SELECT count(*) FROM reclaim_report_stats_daily WHERE company_id = '*') AS all_day_rows`,
    );
    const company = companies[7]!;
    await check(db, client, now, company);

    // Rounds of every aggregate in turn (after warm-up), so a burst of load from other
    // processes falls on all of them alike; a Prisma round trip of `SELECT 1` in each round is
    // the floor this machine's load puts under any query. The baseline runs a few times after.
    const list = aggregates(db, client, now, company);
    const floor = { name: "floor", rollup: () => db.$queryRawUnsafe("SELECT 1"), baseline: async () => 0 };
    const samples = new Map<Aggregate, number[]>([...list, floor].map((a) => [a, []]));
    for (let round = -3; round < RUNS; round++) {
      for (const [a, times] of samples) {
        const { ms } = await time(a.rollup);
        if (round >= 0) times.push(ms);
      }
    }
    const results: Record<string, string> = {};
    let worstRollup = 0;
    let worstBaseline = 0;
    for (const a of list) {
      const r = percentiles(samples.get(a)!);
      const b = percentiles(await measure(a.baseline, BASELINE_RUNS, 1));
      worstRollup = Math.max(worstRollup, r.p95);
      worstBaseline = Math.max(worstBaseline, b.p95);
      results[a.name] =
        `rollup p50 ${r.p50.toFixed(1)} ms, p95 ${r.p95.toFixed(1)} ms; from reports p50 ${b.p50.toFixed(0)} ms, ` +
        `p95 ${b.p95.toFixed(0)} ms`;
    }
    const f = percentiles(samples.get(floor)!);
    results["floor: SELECT 1 through Prisma"] = `p50 ${f.p50.toFixed(1)} ms, p95 ${f.p95.toFixed(1)} ms`;
    const c = counts.rows[0] as Record<string, string>;
    report("console aggregates (GET /v1/stats/*)", {
      reports: fmt(c.reports),
      entries: fmt(c.entries),
      "hourly rollup rows (every-company '*')": `${fmt(c.stats_rows)} (${fmt(c.all_rows)})`,
      "day rollup rows (every-company '*')": `${fmt(c.day_rows)} (${fmt(c.all_day_rows)})`,
      "seeding / building the rollup": kept
        ? `kept from a previous run (seeded for ${now.toISOString()})${REBUILD ? `; rollup rebuilt in ${(built.ms / 1000).toFixed(0)} s` : ""}`
        : `${(seeded.ms / 1000).toFixed(0)} s / ${(built.ms / 1000).toFixed(0)} s`,
      ...results,
      "worst aggregate p95, rollup": `${worstRollup.toFixed(1)} ms (target < 100 ms: ${worstRollup < 100 ? "met" : "NOT met"})`,
      "worst aggregate p95, from reports": `${worstBaseline.toFixed(0)} ms`,
      "ratio (rollup / reports)": (worstRollup / worstBaseline).toFixed(4),
    });
  } finally {
    await db.$disconnect();
    await client.end();
    await env.cleanup();
  }
}

void main().catch((error) => {
  console.error(error);
  process.exit(1);
});
