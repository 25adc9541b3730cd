-- Folds the figures of stored reports into the running totals and the rollups, oldest first,
-- in one statement (atomic on its own; see settle.ts `foldReports`): takes up to $1 rows of
-- reclaim_reports_unfolded (each appended by the statement that stored its report,
-- settle-jobs.sql) and deletes them, and for all of them together:
--  - adds them to their domains' running totals (reclaim_report_totals, report-totals.ts): the
--    shard $2 of the folding process (settle.ts), one of REPORT_TOTAL_SHARDS rows per domain;
--  - deletes up to $5 reports per report of each domain that are past retention;
--  - adds the entries the jobs counted to the rollup (report-stats.ts) by hour
--    (reclaim_report_stats) and by UTC day (reclaim_report_stats_daily), each to its company's
--    row and to the row of every company ('*'), rows in key order so concurrent folds lock the
--    shared '*' rows in one order; deletes up to $4 hourly rows per report older than $3 days
--    before the newest report it folds finished, and up to $4 day rows per report whose whole
--    day lies before that.
-- A row another fold took meanwhile is gone when this one gets to it, and is left out: every
-- report is counted once. Every row it reads is found by an index and deleted by its key or
-- its ctid (settle-jobs.sql), so no plan, generic or custom, reads these tables through.
-- $1 int: rows to fold at most   $2 int: the shard of the running totals
-- $3 int: rollup rows are kept this many days (STATS_RETENTION_DAYS)
-- $4 int: rollup rows to prune per report at most   $5 int: reports to prune per report at most
-- Each row's figures (jsonb): {"domain", "scope", "dryRun", "candidates", "removed",
--   "candidateBytes", "reclaimedBytes", "skipped" ({reason: count}), "error", "finishedAt",
--   "seconds" (duration), "buckets" (1 for each bound of REPORT_DURATION_BUCKETS the duration
--   is within, else 0), "pruneBefore" (reports of the domain that finished before this are
--   past retention), "stats" ([{"companyId" (the entry's, else the job's scope), "outcome",
--   "reason" ('' for none), "entries", "bytes"}], each (company, outcome, reason) at most once)}
-- Output: one row, folded int: the rows folded (fewer than $1: none were left)
WITH taken AS (
  DELETE FROM reclaim_reports_unfolded
   WHERE id = ANY (ARRAY(SELECT id FROM reclaim_reports_unfolded ORDER BY id LIMIT $1::int))
  RETURNING figures
), jobs AS (
  SELECT j.*
    FROM taken t
   CROSS JOIN LATERAL jsonb_to_record(t.figures) AS j(
           domain text, scope text, "dryRun" boolean, candidates int, removed int,
           "candidateBytes" bigint, "reclaimedBytes" bigint, skipped jsonb, error text,
           "finishedAt" timestamptz, seconds float8, buckets bigint[], "pruneBefore" timestamptz,
           stats jsonb)
), kept AS (
  -- Rollup rows of hours before this are past retention.
  SELECT max("finishedAt") - make_interval(days => $3::int) AS since FROM jobs
), pruned AS (
  DELETE FROM reclaim_batch_reports
   WHERE ctid = ANY (ARRAY(
           SELECT old.ctid
             FROM (SELECT domain, min("pruneBefore") AS before, count(*) * $5::int AS n
                     FROM jobs GROUP BY domain) AS p
            CROSS JOIN LATERAL (SELECT ctid FROM reclaim_batch_reports
                                 WHERE domain = p.domain AND finished_at < p.before
                                 ORDER BY finished_at
                                 LIMIT p.n) AS old))
), cells AS (
  SELECT j.domain, k.company_id, j."finishedAt" AS finished_at, j."dryRun" AS dry_run, c.outcome, c.reason,
         c.entries, c.bytes
    FROM jobs j
   CROSS JOIN LATERAL jsonb_to_recordset(j.stats)
         AS c("companyId" text, outcome text, reason text, entries bigint, bytes bigint)
   CROSS JOIN LATERAL (VALUES (c."companyId"), ('*')) AS k(company_id)
), rollup AS (
  INSERT INTO reclaim_report_stats AS s (domain, company_id, hour, dry_run, outcome, reason, entries, bytes)
  SELECT domain, company_id, date_trunc('hour', finished_at, 'UTC'), dry_run, outcome, reason,
         sum(entries), sum(bytes)
    FROM cells
   GROUP BY 1, 2, 3, 4, 5, 6
   ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (domain, company_id, hour, dry_run, outcome, reason) DO UPDATE SET
    entries = s.entries + EXCLUDED.entries,
    bytes = s.bytes + EXCLUDED.bytes
), rollup_daily AS (
  INSERT INTO reclaim_report_stats_daily AS s (domain, company_id, day, dry_run, outcome, reason, entries, bytes)
  SELECT domain, company_id, date_trunc('day', finished_at, 'UTC'), dry_run, outcome, reason,
         sum(entries), sum(bytes)
    FROM cells
   GROUP BY 1, 2, 3, 4, 5, 6
   ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (domain, company_id, day, dry_run, outcome, reason) DO UPDATE SET
    entries = s.entries + EXCLUDED.entries,
    bytes = s.bytes + EXCLUDED.bytes
), rollup_pruned AS (
  DELETE FROM reclaim_report_stats
   WHERE ctid = ANY (ARRAY(SELECT ctid FROM reclaim_report_stats
                            WHERE hour < (SELECT since FROM kept)
                            ORDER BY hour
                            LIMIT $4::int * (SELECT count(*) FROM jobs)))
), rollup_daily_pruned AS (
  DELETE FROM reclaim_report_stats_daily
   WHERE ctid = ANY (ARRAY(SELECT ctid FROM reclaim_report_stats_daily
                            WHERE day <= (SELECT since FROM kept) - interval '1 day'
                            ORDER BY day
                            LIMIT $4::int * (SELECT count(*) FROM jobs)))
), totals AS (
  INSERT INTO reclaim_report_totals AS t
    (domain, shard, batches, errors, candidates, removed, candidate_bytes, reclaimed_bytes, duration_sum,
     duration_buckets, skipped)
  SELECT j.domain, $2::int, count(*), count(*) FILTER (WHERE j.error IS NOT NULL),
         sum(j.candidates), sum(j.removed), sum(j."candidateBytes"), sum(j."reclaimedBytes"), sum(j.seconds),
         ARRAY(SELECT sum(b.n)::bigint
                 FROM jobs k, unnest(k.buckets) WITH ORDINALITY AS b(n, i)
                WHERE k.domain = j.domain
                GROUP BY b.i ORDER BY b.i),
         (SELECT COALESCE(jsonb_object_agg(s.reason, s.total), '{}'::jsonb)
            FROM (SELECT e.key AS reason, sum(e.value::bigint) AS total
                    FROM jobs k, jsonb_each_text(k.skipped) AS e
                   WHERE k.domain = j.domain
                   GROUP BY e.key) AS s)
    FROM jobs j
   GROUP BY j.domain
  ON CONFLICT (domain, shard) DO UPDATE SET
    batches = t.batches + EXCLUDED.batches,
    errors = t.errors + EXCLUDED.errors,
    candidates = t.candidates + EXCLUDED.candidates,
    removed = t.removed + EXCLUDED.removed,
    candidate_bytes = t.candidate_bytes + EXCLUDED.candidate_bytes,
    reclaimed_bytes = t.reclaimed_bytes + EXCLUDED.reclaimed_bytes,
    duration_sum = t.duration_sum + EXCLUDED.duration_sum,
    duration_buckets = ARRAY(SELECT COALESCE(a, 0) + COALESCE(b, 0)
                               FROM unnest(t.duration_buckets, EXCLUDED.duration_buckets)
                                    WITH ORDINALITY AS u(a, b, i) ORDER BY i),
    skipped = CASE WHEN EXCLUDED.skipped = '{}'::jsonb THEN t.skipped ELSE
                (SELECT COALESCE(jsonb_object_agg(k, COALESCE((t.skipped ->> k)::bigint, 0)
                                                    + COALESCE((EXCLUDED.skipped ->> k)::bigint, 0)), '{}'::jsonb)
                   FROM (SELECT jsonb_object_keys(t.skipped) UNION SELECT jsonb_object_keys(EXCLUDED.skipped)) AS keys(k))
              END
)
SELECT count(*)::int AS folded FROM jobs
