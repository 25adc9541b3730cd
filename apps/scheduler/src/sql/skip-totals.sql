-- Skips by domain and reason over every stored batch report, for /metrics.
-- Output: domain, reason, total
SELECT r.domain, s.key AS reason, sum(s.value::bigint)::float8 AS total
  FROM reclaim_batch_reports r, jsonb_each_text(r.skipped) AS s
 GROUP BY r.domain, s.key
