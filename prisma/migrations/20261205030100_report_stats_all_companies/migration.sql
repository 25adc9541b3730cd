-- Reclaim: the hourly rollup also keeps one row summed over every company (company_id '*') per
-- domain, hour, dry run, outcome and reason, so an instance-wide aggregate reads a few rows per
-- hour instead of one per company and hour (with 1,000,000 reports over 30 days, ~30,000 rows
-- instead of millions; bench/console/stats.ts). A company filter reads that company's rows; '*'
-- is neither a uuid nor `instance`, so no filter can name it. Both kinds of row are written by
-- the same statement in the report's transaction (packages/core/src/ledger/add-report-stats.sql).
-- Every query now starts with company_id (the (company_id, outcome, hour) index, or the primary
-- key with a domain), so the (outcome, hour, domain) index goes; pruning finds old rows by hour.

DROP INDEX IF EXISTS "reclaim_report_stats_outcome_hour_idx";
CREATE INDEX "reclaim_report_stats_hour_idx" ON "reclaim_report_stats"("hour");

INSERT INTO "reclaim_report_stats" (domain, company_id, hour, dry_run, outcome, reason, entries, bytes)
SELECT domain, '*', hour, dry_run, outcome, reason, sum(entries), sum(bytes)
  FROM "reclaim_report_stats"
 WHERE company_id <> '*'
 GROUP BY domain, hour, dry_run, outcome, reason
ON CONFLICT (domain, company_id, hour, dry_run, outcome, reason) DO NOTHING;
