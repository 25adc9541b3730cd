-- Reclaim: day-level rows of the report rollup, written alongside the hourly rows in the same
-- statement of the report's transaction (packages/core/src/ledger/add-report-stats.sql), so
-- an aggregate over days reads one row per day instead of 24: day buckets, and the 7 d and
-- 30 d totals (hourly rows only for the partial day at the start of a window, the last 24 h
-- and hour buckets; packages/core/src/stats). With 1,000,000 reports over 30 days an
-- instance-wide 30 d total read ~26,000 hourly rows; now ~1,300 day rows and at most 23
-- hours at each window's start (bench/console/stats.ts).
--
-- Same columns and meaning as reclaim_report_stats (also the '*' rows summed over every
-- company), with `day`: the report's finished_at truncated to the day (UTC). A day row always
-- equals the sum of that day's hourly rows; pruned with them, once the whole day is past
-- STATS_RETENTION_DAYS.

CREATE TABLE "reclaim_report_stats_daily" (
    "domain" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "day" TIMESTAMPTZ(6) NOT NULL,
    "dry_run" BOOLEAN NOT NULL,
    "outcome" TEXT NOT NULL,
    "reason" TEXT NOT NULL DEFAULT '',
    "entries" BIGINT NOT NULL DEFAULT 0,
    "bytes" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "reclaim_report_stats_daily_pkey" PRIMARY KEY ("domain", "company_id", "day", "dry_run", "outcome", "reason")
);

-- Every aggregate: one company (or '*'), an outcome and a range of days; covering, so the sums
-- are index-only scans.
CREATE INDEX "reclaim_report_stats_daily_company_outcome_day_idx" ON "reclaim_report_stats_daily"("company_id", "outcome", "day") INCLUDE ("domain", "dry_run", "reason", "entries", "bytes");
-- Pruning finds old rows by day.
CREATE INDEX "reclaim_report_stats_daily_day_idx" ON "reclaim_report_stats_daily"("day");

-- The days of the hourly rows recorded so far.
INSERT INTO "reclaim_report_stats_daily" (domain, company_id, day, dry_run, outcome, reason, entries, bytes)
SELECT domain, company_id, date_trunc('day', hour, 'UTC'), dry_run, outcome, reason, sum(entries), sum(bytes)
  FROM "reclaim_report_stats"
 GROUP BY 1, 2, 3, 4, 5, 6;
