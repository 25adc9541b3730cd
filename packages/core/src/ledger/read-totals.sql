-- Every domain's running report totals, its shards (fold-reports.sql) added up.
-- No parameters.
-- Output, one row per domain in domain order: domain text; batches, errors, candidates,
-- removed, candidate_bytes, reclaimed_bytes text (bigints); duration_sum float8;
-- duration_buckets text[] (bigints, in REPORT_DURATION_BUCKETS order); skipped jsonb
-- ({reason: count})
SELECT t.domain,
       sum(t.batches)::text AS batches,
       sum(t.errors)::text AS errors,
       sum(t.candidates)::text AS candidates,
       sum(t.removed)::text AS removed,
       sum(t.candidate_bytes)::text AS candidate_bytes,
       sum(t.reclaimed_bytes)::text AS reclaimed_bytes,
       sum(t.duration_sum)::float8 AS duration_sum,
       (SELECT array_agg(b.total::text ORDER BY b.i)
          FROM (SELECT u.i, sum(u.n) AS total
                  FROM reclaim_report_totals s, unnest(s.duration_buckets) WITH ORDINALITY AS u(n, i)
                 WHERE s.domain = t.domain
                 GROUP BY u.i) AS b) AS duration_buckets,
       (SELECT COALESCE(jsonb_object_agg(k.reason, k.total), '{}'::jsonb)
          FROM (SELECT e.key AS reason, sum(e.value::bigint)::text AS total
                  FROM reclaim_report_totals s, jsonb_each_text(s.skipped) AS e
                 WHERE s.domain = t.domain
                 GROUP BY e.key) AS k) AS skipped
  FROM reclaim_report_totals t
 GROUP BY t.domain
 ORDER BY t.domain
