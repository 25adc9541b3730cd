-- Per-domain totals over every stored batch report, for /metrics.
-- Output: domain, batches, errors, candidates, removed, candidate_bytes, reclaimed_bytes,
--         duration_sum (seconds)
SELECT domain,
       count(*)::int AS batches,
       count(*) FILTER (WHERE error IS NOT NULL)::int AS errors,
       COALESCE(sum(candidates), 0)::float8 AS candidates,
       COALESCE(sum(removed), 0)::float8 AS removed,
       COALESCE(sum(candidate_bytes), 0)::float8 AS candidate_bytes,
       COALESCE(sum(reclaimed_bytes), 0)::float8 AS reclaimed_bytes,
       COALESCE(sum(EXTRACT(EPOCH FROM finished_at - started_at)), 0)::float8 AS duration_sum
  FROM reclaim_batch_reports
 GROUP BY domain
