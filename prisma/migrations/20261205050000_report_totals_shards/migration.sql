-- Reclaim: running report totals in shards. Every job adds its report to its domain's totals
-- in the statement that stores the report (packages/core/src/ledger/settle-job.sql). With one
-- row per domain, that row's lock was held by each job until its commit had reached the disk,
-- so the jobs of a domain committed one after another instead of together (issue 14,
-- bench/platform/throughput.ts). A job now adds to one of a few rows of its domain, chosen
-- by its connection; readers add the shards up (packages/core/src/ledger/read-totals.sql).
-- The existing row of each domain becomes its shard 0.

ALTER TABLE "reclaim_report_totals" ADD COLUMN "shard" SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE "reclaim_report_totals" DROP CONSTRAINT "reclaim_report_totals_pkey";
ALTER TABLE "reclaim_report_totals" ADD CONSTRAINT "reclaim_report_totals_pkey" PRIMARY KEY ("domain", "shard");
