-- Reclaim 0004: running totals of every batch report, so report rows can be pruned
-- (RECLAIM_REPORT_RETENTION_DAYS) while /metrics counters keep counting.
--
-- One row per domain, added to in the same transaction that inserts a report
-- (packages/core/src/ledger/add-report-totals.sql). duration_buckets holds, for each upper
-- bound of REPORT_DURATION_BUCKETS (packages/core/src/ledger/report-totals.ts), how many
-- batches took at most that many seconds; the bounds below must stay equal to those.

CREATE TABLE "reclaim_report_totals" (
    "domain" TEXT NOT NULL,
    "batches" BIGINT NOT NULL DEFAULT 0,
    "errors" BIGINT NOT NULL DEFAULT 0,
    "candidates" BIGINT NOT NULL DEFAULT 0,
    "removed" BIGINT NOT NULL DEFAULT 0,
    "candidate_bytes" BIGINT NOT NULL DEFAULT 0,
    "reclaimed_bytes" BIGINT NOT NULL DEFAULT 0,
    "duration_sum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "duration_buckets" BIGINT[] NOT NULL,
    "skipped" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "reclaim_report_totals_pkey" PRIMARY KEY ("domain")
);

-- Reports stored before this migration count too.
INSERT INTO "reclaim_report_totals"
  (domain, batches, errors, candidates, removed, candidate_bytes, reclaimed_bytes, duration_sum,
   duration_buckets, skipped)
SELECT r.domain,
       count(*),
       count(*) FILTER (WHERE r.error IS NOT NULL),
       COALESCE(sum(r.candidates), 0),
       COALESCE(sum(r.removed), 0),
       COALESCE(sum(r.candidate_bytes), 0),
       COALESCE(sum(r.reclaimed_bytes), 0),
       COALESCE(sum(EXTRACT(EPOCH FROM r.finished_at - r.started_at)), 0),
       ARRAY(SELECT count(*) FILTER (WHERE EXTRACT(EPOCH FROM x.finished_at - x.started_at) <= b.le)
               FROM reclaim_batch_reports x,
                    unnest(ARRAY[0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]::float8[])
                      WITH ORDINALITY AS b(le, i)
              WHERE x.domain = r.domain
              GROUP BY b.i ORDER BY b.i),
       COALESCE((SELECT jsonb_object_agg(s.reason, s.total)
                   FROM (SELECT k.key AS reason, sum(k.value::bigint) AS total
                           FROM reclaim_batch_reports y, jsonb_each_text(y.skipped) AS k
                          WHERE y.domain = r.domain
                          GROUP BY k.key) s), '{}'::jsonb)
  FROM reclaim_batch_reports r
 GROUP BY r.domain;
