-- Settles finished jobs in one statement (atomic on its own, one round trip; see settle.ts).
-- For each job:
--  - consumes the ledger rows it claimed, unless they were touched again meanwhile (their
--    version moved on: they stay, and the job runs again);
--  - stores its report row, and appends its figures to reclaim_reports_unfolded, from where a
--    fold (fold-reports.sql) adds them to the running totals and the rollups and prunes old
--    reports and rollup rows; readers fold first (settle.ts `foldReports`).
-- For all of them together:
--  - records the deadlines their checks computed: LEAST with what is there, version bumped
--    (request-deadlines.sql). A claimed row that is requested again is updated in place to
--    the new due time instead of being deleted and inserted, because the parts of one
--    statement do not see each other's changes.
-- Every row it deletes is first found by an index (a claim by the primary key) and then deleted
-- by its ctid, `ctid = ANY (ARRAY(...))` (a TID scan): so no plan, generic or custom, reads
-- the ledger through (a hash join took the whole ledger for a batch's few claims). A row
-- another transaction changed after the lookup has moved on to a new ctid and is left alone,
-- as a claim touched again must be.
-- $1 jsonb: the jobs, [{"id" (uuid of the report row), "domain", "scope", "jobId", "dryRun",
--   "checked", "candidates", "removed", "candidateBytes", "reclaimedBytes", "skipped" ({reason:
--   count}), "entries", "error", "cancelled", "nextCursor", "startedAt", "finishedAt",
--   "claimed" ([{"reason", "version"}]), and the figures fold-reports.sql reads: "seconds",
--   "buckets", "pruneBefore", "stats"}]; each job's figures are the job less its "id",
--   "jobId", "checked", "entries", "cancelled", "nextCursor", "startedAt" and "claimed"
-- $2 jsonb: deadlines [{"domain", "scope", "reason", "dueAt"}], one per (domain, scope, reason)
-- $3 timestamptz: now (the deadlines' updated_at)
-- Output: none
WITH jobs AS (
  SELECT e.job, j.*
    FROM jsonb_array_elements($1::jsonb) AS e(job)
   CROSS JOIN LATERAL jsonb_to_record(e.job) AS j(
           id uuid, domain text, scope text, "jobId" text, "dryRun" boolean, checked int,
           candidates int, removed int, "candidateBytes" bigint, "reclaimedBytes" bigint,
           skipped jsonb, entries jsonb, error text, cancelled boolean, "nextCursor" text,
           "startedAt" timestamptz, "finishedAt" timestamptz, claimed jsonb)
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
), unfolded AS (
  INSERT INTO reclaim_reports_unfolded (figures)
  SELECT j.job - '{id,jobId,checked,entries,cancelled,nextCursor,startedAt,claimed}'::text[]
    FROM jobs j
)
INSERT INTO reclaim_batch_reports
  (id, job_id, domain, company_id, dry_run, checked, candidates, removed, candidate_bytes, reclaimed_bytes,
   skipped, entries, error, cancelled, next_cursor, started_at, finished_at)
SELECT j.id, j."jobId", j.domain, j.scope, j."dryRun", j.checked, j.candidates, j.removed, j."candidateBytes",
       j."reclaimedBytes", j.skipped, j.entries, j.error, j.cancelled, j."nextCursor", j."startedAt", j."finishedAt"
  FROM jobs j
