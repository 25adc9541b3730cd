-- Settles finished jobs in one statement (atomic on its own, one round trip; see settle.ts).
-- For each job:
--  - consumes the ledger rows it claimed, unless they were touched again meanwhile (their
--    version moved on: they stay, and the job runs again);
--  - stores its report row.
-- For all of them together:
--  - records the deadlines their checks computed: LEAST with what is there, version bumped
--    (request-deadlines.sql). A claimed row that is requested again is updated in place to
--    the new due time instead of being deleted and inserted, because the parts of one
--    statement do not see each other's changes;
--  - adds the reports to their domains' running totals (reclaim_report_totals,
--    report-totals.ts): the shard $5 of the settling process (settle.ts), one of
--    REPORT_TOTAL_SHARDS rows per domain, because a row stays locked until its transaction's
--    commit is on disk, and with one row per domain concurrent settlements of several
--    processes would commit one after another;
--  - deletes up to $4 reports per job of each domain that are past retention;
--  - adds the entries the jobs counted to the rollup (report-stats.ts) by hour
--    (reclaim_report_stats) and by UTC day (reclaim_report_stats_daily), each to its company's
--    row and to the row of every company ('*'), rows in key order so concurrent settlements
--    lock the shared '*' rows in one order; deletes up to $7 hourly rows per job older than
--    $6 and up to $7 day rows per job whose whole day lies before $6.
-- Every row it deletes is first found by an index (a claim by the primary key, old reports and
-- rollup rows by their time index, oldest first) and then deleted by its ctid, `ctid = ANY
-- (ARRAY(...))` (a TID scan): so no plan, generic or custom, reads these tables through (a hash
-- join took the whole ledger for a batch's few claims). A row another transaction changed after
-- the lookup has moved on to a new ctid and is left alone, as a claim touched again must be.
-- $1 jsonb: the jobs, [{"id" (uuid of the report row), "domain", "scope", "jobId", "dryRun",
--   "checked", "candidates", "removed", "candidateBytes", "reclaimedBytes", "skipped" ({reason:
--   count}), "entries", "error", "cancelled", "nextCursor", "startedAt", "finishedAt",
--   "seconds" (duration), "buckets" (1 for each bound of REPORT_DURATION_BUCKETS the duration
--   is within, else 0), "pruneBefore", "claimed" ([{"reason", "version"}]), "stats"
--   ([{"companyId" (the entry's, else the job's scope), "outcome", "reason" ('' for none),
--   "entries", "bytes"}], each (company, outcome, reason) at most once)}]
-- $2 jsonb: deadlines [{"domain", "scope", "reason", "dueAt"}], one per (domain, scope, reason)
-- $3 timestamptz: now (the deadlines' updated_at)
-- $4 int: reports to prune per job at most   $5 int: the shard of the running totals
-- $6 timestamptz: rollup rows of hours before this are past retention
-- $7 int: rollup rows to prune per job at most
-- Output: one row per job: id uuid, key_due timestamptz: when the job's own key is due next as
-- far as this statement changed the ledger (null: no rows left; a hint for how soon to sync
-- the key, since rows written by others meanwhile are not counted)
WITH jobs AS (
  SELECT *
    FROM jsonb_to_recordset($1::jsonb) AS j(
           id uuid, domain text, scope text, "jobId" text, "dryRun" boolean, checked int,
           candidates int, removed int, "candidateBytes" bigint, "reclaimedBytes" bigint,
           skipped jsonb, entries jsonb, error text, cancelled boolean, "nextCursor" text,
           "startedAt" timestamptz, "finishedAt" timestamptz, seconds float8, buckets bigint[],
           "pruneBefore" timestamptz, claimed jsonb, stats jsonb)
), claimed AS (
  SELECT j.domain, j.scope, c.reason, c.version
    FROM jobs j, jsonb_to_recordset(j.claimed) AS c(reason text, version bigint)
), requested AS (
  SELECT r.domain, r.scope, r.reason, r."dueAt" AS due_at
    FROM jsonb_to_recordset($2::jsonb) AS r(domain text, scope text, reason text, "dueAt" timestamptz)
), consumed AS (
  DELETE FROM reclaim_deadlines
   WHERE ctid = ANY (ARRAY(
           SELECT d.ctid
             FROM claimed c
            CROSS JOIN LATERAL (SELECT ctid FROM reclaim_deadlines
                                 WHERE domain = c.domain AND company_id = c.scope AND reason = c.reason
                                   AND version = c.version
                                OFFSET 0) AS d
            WHERE NOT EXISTS (SELECT 1 FROM requested r
                               WHERE r.domain = c.domain AND r.scope = c.scope AND r.reason = c.reason)))
), recorded AS (
  INSERT INTO reclaim_deadlines AS d (domain, company_id, reason, due_at, version, created_at, updated_at)
  SELECT r.domain, r.scope, r.reason, r.due_at, 1, $3::timestamptz, $3::timestamptz
    FROM requested r
  ON CONFLICT (domain, company_id, reason) DO UPDATE
     SET due_at = CASE
                    WHEN EXISTS (SELECT 1 FROM claimed c
                                  WHERE c.domain = d.domain AND c.scope = d.company_id
                                    AND c.reason = d.reason AND c.version = d.version)
                    THEN EXCLUDED.due_at
                    ELSE LEAST(d.due_at, EXCLUDED.due_at)
                  END,
         version = d.version + 1,
         updated_at = EXCLUDED.updated_at
  RETURNING d.domain, d.company_id, d.reason, d.due_at
), pruned AS (
  DELETE FROM reclaim_batch_reports
   WHERE ctid = ANY (ARRAY(
           SELECT old.ctid
             FROM (SELECT domain, min("pruneBefore") AS before, count(*) * $4::int AS n
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
                            WHERE hour < $6::timestamptz
                            ORDER BY hour
                            LIMIT $7::int * (SELECT count(*) FROM jobs)))
), rollup_daily_pruned AS (
  DELETE FROM reclaim_report_stats_daily
   WHERE ctid = ANY (ARRAY(SELECT ctid FROM reclaim_report_stats_daily
                            WHERE day <= $6::timestamptz - interval '1 day'
                            ORDER BY day
                            LIMIT $7::int * (SELECT count(*) FROM jobs)))
), totals AS (
  INSERT INTO reclaim_report_totals AS t
    (domain, shard, batches, errors, candidates, removed, candidate_bytes, reclaimed_bytes, duration_sum,
     duration_buckets, skipped)
  SELECT j.domain, $5::int, count(*), count(*) FILTER (WHERE j.error IS NOT NULL),
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
INSERT INTO reclaim_batch_reports AS b
  (id, job_id, domain, company_id, dry_run, checked, candidates, removed, candidate_bytes, reclaimed_bytes,
   skipped, entries, error, cancelled, next_cursor, started_at, finished_at)
SELECT j.id, j."jobId", j.domain, j.scope, j."dryRun", j.checked, j.candidates, j.removed, j."candidateBytes",
       j."reclaimedBytes", j.skipped, j.entries, j.error, j.cancelled, j."nextCursor", j."startedAt", j."finishedAt"
  FROM jobs j
RETURNING b.id, (
  SELECT min(k.due_at)
    FROM (SELECT r.due_at FROM recorded r WHERE r.domain = b.domain AND r.company_id = b.company_id
          UNION ALL
          SELECT d.due_at FROM reclaim_deadlines d
           WHERE d.domain = b.domain AND d.company_id = b.company_id
             AND NOT EXISTS (SELECT 1 FROM claimed c
                              WHERE c.domain = d.domain AND c.scope = d.company_id
                                AND c.reason = d.reason AND c.version = d.version)
             AND NOT EXISTS (SELECT 1 FROM recorded r
                              WHERE r.domain = d.domain AND r.company_id = d.company_id AND r.reason = d.reason)
         ) AS k
) AS key_due
