-- Reclaim: hourly rollup of report entries, so the console's aggregates (reclaimed bytes per
-- domain over 24 h / 7 d / 30 d, reclaimed bytes and skips by reason over time, per domain and
-- company) are each one query on an index instead of a scan of report rows and their entries.
--
-- One row per domain, company, hour, dry run, outcome and reason, added to in the same
-- transaction that inserts a report (packages/core/src/ledger/add-report-stats.sql), from every
-- entry the batch counted (also those beyond the entries a report row keeps).
--   company_id: the entry's company when it names one, else the report's scope (a company uuid
--               or `instance`), so a company's figures never include another company's entries
--   hour:       the report's finished_at truncated to the hour (UTC)
--   outcome:    candidate, removed, skipped, noted or failed; reason '' when the entry has none
--   entries, bytes: how many entries, and the sum of their bytes (allocated bytes)
-- Rows older than the longest range the stats routes answer are pruned a few per stored report
-- (packages/core/src/ledger/report-stats.ts).

CREATE TABLE "reclaim_report_stats" (
    "domain" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "hour" TIMESTAMPTZ(6) NOT NULL,
    "dry_run" BOOLEAN NOT NULL,
    "outcome" TEXT NOT NULL,
    "reason" TEXT NOT NULL DEFAULT '',
    "entries" BIGINT NOT NULL DEFAULT 0,
    "bytes" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "reclaim_report_stats_pkey" PRIMARY KEY ("domain", "company_id", "hour", "dry_run", "outcome", "reason")
);

-- Instance-wide aggregates (every domain, or one): outcome and a time range first; covering, so
-- the sums are index-only scans.
CREATE INDEX "reclaim_report_stats_outcome_hour_idx" ON "reclaim_report_stats"("outcome", "hour", "domain") INCLUDE ("dry_run", "reason", "entries", "bytes");
-- One company's aggregates.
CREATE INDEX "reclaim_report_stats_company_outcome_hour_idx" ON "reclaim_report_stats"("company_id", "outcome", "hour") INCLUDE ("domain", "dry_run", "reason", "entries", "bytes");

-- Reports stored before this migration count too (their kept entries: a report row keeps at most
-- 2,000 entries, so a larger batch counts only those).
INSERT INTO "reclaim_report_stats" (domain, company_id, hour, dry_run, outcome, reason, entries, bytes)
SELECT r.domain,
       COALESCE(NULLIF(e.value ->> 'companyId', ''), r.company_id),
       date_trunc('hour', r.finished_at, 'UTC'),
       r.dry_run,
       e.value ->> 'outcome',
       COALESCE(e.value ->> 'reason', ''),
       count(*),
       COALESCE(sum((e.value ->> 'bytes')::numeric), 0)::bigint
  FROM reclaim_batch_reports r, jsonb_array_elements(r.entries) AS e(value)
 WHERE e.value ->> 'outcome' IS NOT NULL
 GROUP BY 1, 2, 3, 4, 5, 6;
