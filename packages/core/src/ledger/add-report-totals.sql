-- Adds one batch report to its domain's running totals (the report's own transaction).
-- $1 text: domain          $2 int: 1 when the batch failed, else 0
-- $3 int: candidates       $4 int: removed
-- $5 bigint: candidate bytes   $6 bigint: reclaimed bytes
-- $7 float8: duration in seconds
-- $8 float8[]: bucket upper bounds (REPORT_DURATION_BUCKETS), $9 jsonb: skips by reason
-- Output: none
INSERT INTO reclaim_report_totals AS t
  (domain, batches, errors, candidates, removed, candidate_bytes, reclaimed_bytes, duration_sum,
   duration_buckets, skipped)
VALUES ($1, 1, $2::int, $3::int, $4::int, $5::bigint, $6::bigint, $7::float8,
        ARRAY(SELECT (CASE WHEN $7::float8 <= le THEN 1 ELSE 0 END)::bigint
                FROM unnest($8::float8[]) WITH ORDINALITY AS b(le, i) ORDER BY i),
        $9::jsonb)
ON CONFLICT (domain) DO UPDATE SET
  batches = t.batches + 1,
  errors = t.errors + EXCLUDED.errors,
  candidates = t.candidates + EXCLUDED.candidates,
  removed = t.removed + EXCLUDED.removed,
  candidate_bytes = t.candidate_bytes + EXCLUDED.candidate_bytes,
  reclaimed_bytes = t.reclaimed_bytes + EXCLUDED.reclaimed_bytes,
  duration_sum = t.duration_sum + EXCLUDED.duration_sum,
  duration_buckets = ARRAY(SELECT COALESCE(a, 0) + COALESCE(b, 0)
                             FROM unnest(t.duration_buckets, EXCLUDED.duration_buckets)
                                  WITH ORDINALITY AS u(a, b, i) ORDER BY i),
  skipped = (SELECT COALESCE(jsonb_object_agg(k, COALESCE((t.skipped ->> k)::bigint, 0)
                                                 + COALESCE((EXCLUDED.skipped ->> k)::bigint, 0)), '{}'::jsonb)
               FROM (SELECT jsonb_object_keys(t.skipped) UNION SELECT jsonb_object_keys(EXCLUDED.skipped)) AS keys(k))
