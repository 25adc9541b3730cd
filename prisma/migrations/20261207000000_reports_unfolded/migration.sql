-- Reclaim: reports whose figures are not yet in the running totals and the rollups. The
-- statement that stores a job's report (packages/core/src/ledger/settle-jobs.sql) appends its
-- figures here instead of adding them to reclaim_report_totals, reclaim_report_stats and
-- reclaim_report_stats_daily itself; a fold (fold-reports.sql) takes the oldest rows, adds
-- them to all three at once and deletes them, and readers fold before they read, so what they
-- read counts every stored report once. Settling a batch of jobs then writes only the ledger,
-- the reports and this append, not the shared rows of every domain and company (issue 14,
-- bench/platform/throughput.ts). The key orders the folds, oldest first.
CREATE TABLE "reclaim_reports_unfolded" (
    "id" BIGSERIAL NOT NULL,
    "figures" JSONB NOT NULL,

    CONSTRAINT "reclaim_reports_unfolded_pkey" PRIMARY KEY ("id")
);
