-- Cumulative histogram counts of batch wall time, for /metrics.
-- $1 float8[]: bucket upper bounds in seconds
-- Output: domain, le (the bound), count (batches that took at most le seconds)
SELECT r.domain, b.le, count(*)::int AS count
  FROM reclaim_batch_reports r
  JOIN unnest($1::float8[]) AS b(le) ON EXTRACT(EPOCH FROM r.finished_at - r.started_at) <= b.le
 GROUP BY r.domain, b.le
