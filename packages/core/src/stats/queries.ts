/**
 * The console's aggregates, read from the rollup of report entries (ledger/report-stats.ts: day
 * rows for whole UTC days, hourly rows for hour buckets and the hours of partial days) and the
 * restore-point table: each one query on indexes, reading a number of rows bounded by the
 * range whatever the number of reports and entries (bench/console/stats.ts), after folding the
 * figures of reports not yet in the rollup (ledger/settle.ts `foldReports`). The
 * `GET /v1/stats/*` routes answer with these shapes.
 */
import type { Db } from "../db";
import { sqlFile } from "../db/sql";
import { ALL_COMPANIES } from "../ledger/report-stats";
import { foldReports } from "../ledger/settle";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export type StatsBucket = "hour" | "day";
export const STATS_BUCKETS: readonly StatsBucket[] = ["hour", "day"];
/** The longest range each bucket size answers (744 hour buckets, 366 day buckets). */
export const MAX_STATS_RANGE_MS: Record<StatsBucket, number> = { hour: 31 * DAY_MS, day: 366 * DAY_MS };
/** The range asked for when only its end (or nothing) is given. */
export const DEFAULT_STATS_RANGE_MS: Record<StatsBucket, number> = { hour: 2 * DAY_MS, day: 30 * DAY_MS };

export interface StatsFilter {
  /** One domain, or every domain. */
  domain?: string;
  /** One company id or `instance` (a scope), or every scope. */
  scope?: string;
}

/** Entries of one window of the overview (the last 24, 168 or 720 hour buckets). */
export interface WindowTotals {
  reclaimedBytes: number;
  removed: number;
  /** Entries kept, with a reason (`skipped`), in real runs and diagnoses alike. */
  kept: number;
  failed: number;
  /** Candidates of real runs (removed, or about to be) and their bytes. */
  candidates: number;
  candidateBytes: number;
  /** Candidates of dry runs: what would have been reclaimed. */
  dryRunCandidates: number;
  dryRunCandidateBytes: number;
}

export const STATS_WINDOWS = ["24h", "7d", "30d"] as const;
export type StatsWindow = (typeof STATS_WINDOWS)[number];

export interface DomainTotals {
  domain: string;
  windows: Record<StatsWindow, WindowTotals>;
}

export const emptyWindow = (): WindowTotals => ({
  reclaimedBytes: 0,
  removed: 0,
  kept: 0,
  failed: 0,
  candidates: 0,
  candidateBytes: 0,
  dryRunCandidates: 0,
  dryRunCandidateBytes: 0,
});

interface TotalsRow {
  domain: string;
  outcome: string;
  dry_run: boolean;
  entries_24h: bigint;
  bytes_24h: bigint;
  entries_7d: bigint;
  bytes_7d: bigint;
  entries_30d: bigint;
  bytes_30d: bigint;
}

function addTo(window: WindowTotals, row: TotalsRow, entries: number, bytes: number): void {
  if (row.outcome === "removed") {
    window.removed += entries;
    window.reclaimedBytes += bytes;
  } else if (row.outcome === "skipped") {
    window.kept += entries;
  } else if (row.outcome === "failed") {
    window.failed += entries;
  } else if (row.outcome === "candidate" && row.dry_run) {
    window.dryRunCandidates += entries;
    window.dryRunCandidateBytes += bytes;
  } else if (row.outcome === "candidate") {
    window.candidates += entries;
    window.candidateBytes += bytes;
  }
}

/** The start of the hour bucket `at` lies in (UTC). */
export function hourOf(at: Date): Date {
  return new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS);
}

/** The first UTC midnight at or after `at`. */
function nextDayStart(at: Date): Date {
  return new Date(Math.ceil(at.getTime() / DAY_MS) * DAY_MS);
}

/**
 * Per domain (each of `domains`, zeros where nothing was recorded), the 24 h / 7 d / 30 d
 * windows ending with the current hour bucket (the last 24, 168 and 720 hour buckets).
 */
export async function domainTotals(
  db: Db,
  domains: readonly string[],
  filter: StatsFilter,
  now: Date,
): Promise<DomainTotals[]> {
  const hour = hourOf(now).getTime();
  const first = (hours: number) => new Date(hour - (hours - 1) * HOUR_MS);
  await foldReports(db);
  const rows = await db.$queryRawUnsafe<TotalsRow[]>(
    sqlFile(__dirname, "totals.sql"),
    first(24),
    first(168),
    nextDayStart(first(168)),
    first(720),
    nextDayStart(first(720)),
    filter.domain ?? null,
    filter.scope ?? ALL_COMPANIES,
  );
  const byDomain = new Map<string, DomainTotals>(
    domains.map((domain) => [
      domain,
      { domain, windows: { "24h": emptyWindow(), "7d": emptyWindow(), "30d": emptyWindow() } },
    ]),
  );
  for (const row of rows) {
    const totals = byDomain.get(row.domain);
    if (!totals) continue; // a domain this service no longer serves
    addTo(totals.windows["24h"], row, Number(row.entries_24h), Number(row.bytes_24h));
    addTo(totals.windows["7d"], row, Number(row.entries_7d), Number(row.bytes_7d));
    addTo(totals.windows["30d"], row, Number(row.entries_30d), Number(row.bytes_30d));
  }
  return [...byDomain.values()];
}

export interface StatsRange {
  bucket: StatsBucket;
  /** Inclusive; truncated to its bucket. */
  from: Date;
  /** Exclusive. */
  to: Date;
}

export interface Series {
  key: string;
  /** One value per bucket of the range, aligned with `buckets`. */
  entries: number[];
  bytes: number[];
}

export interface SeriesResult {
  bucket: StatsBucket;
  buckets: string[];
  series: Series[];
}

/** Start of the UTC hour or day `at` lies in. */
export function bucketStart(at: Date, bucket: StatsBucket): Date {
  const size = bucket === "hour" ? HOUR_MS : DAY_MS;
  return new Date(Math.floor(at.getTime() / size) * size);
}

interface SeriesRow {
  key: string;
  bucket: Date;
  entries: bigint;
  bytes: bigint;
}

/**
 * Entries and bytes of one outcome per bucket, one series per domain (`by: "domain"`) or per
 * reason, dense over the range (zeros where nothing was recorded), series ordered by key.
 */
export async function outcomeSeries(
  db: Db,
  query: { outcome: string; by: "domain" | "reason" } & StatsFilter & StatsRange,
): Promise<SeriesResult> {
  const size = query.bucket === "hour" ? HOUR_MS : DAY_MS;
  const first = bucketStart(query.from, query.bucket).getTime();
  const buckets: string[] = [];
  for (let t = first; t < query.to.getTime(); t += size) buckets.push(new Date(t).toISOString());
  // Day buckets: the whole days before `split` from the day rows, the hours of a last day the
  // range ends inside from the hourly rows. Hour buckets: hourly rows only.
  const lastDay = bucketStart(query.to, "day").getTime();
  const split = new Date(query.bucket === "day" && lastDay > first ? lastDay : first);
  await foldReports(db);
  const rows = await db.$queryRawUnsafe<SeriesRow[]>(
    sqlFile(__dirname, "series.sql"),
    query.outcome,
    query.by,
    query.bucket === "hour" ? "1 hour" : "1 day",
    new Date(first),
    split,
    split,
    query.to,
    query.domain ?? null,
    query.scope ?? ALL_COMPANIES,
  );
  const series = new Map<string, Series>();
  for (const row of rows) {
    const index = Math.round((row.bucket.getTime() - first) / size);
    if (index < 0 || index >= buckets.length) continue;
    let s = series.get(row.key);
    if (!s) {
      s = { key: row.key, entries: buckets.map(() => 0), bytes: buckets.map(() => 0) };
      series.set(row.key, s);
    }
    s.entries[index] = Number(row.entries);
    s.bytes[index] = Number(row.bytes);
  }
  return {
    bucket: query.bucket,
    buckets,
    series: [...series.values()].sort((a, b) => a.key.localeCompare(b.key)),
  };
}

export interface RestorePointStatusCount {
  status: string;
  count: number;
  bytes: number;
  oldest: string;
  newest: string;
}

/** One company's restore points by status. */
export async function restorePointsByStatus(db: Db, companyId: string): Promise<RestorePointStatusCount[]> {
  const rows = await db.$queryRawUnsafe<
    { status: string; count: bigint; bytes: bigint; oldest: Date; newest: Date }[]
  >(sqlFile(__dirname, "restore-points.sql"), companyId);
  return rows.map((r) => ({
    status: r.status,
    count: Number(r.count),
    bytes: Number(r.bytes),
    oldest: r.oldest.toISOString(),
    newest: r.newest.toISOString(),
  }));
}
