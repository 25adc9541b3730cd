-- Takes a job's company-scoped advisory lock, then claims the due ledger rows of its key, in
-- one round trip: the first statement of the check's transaction when its domain has no
-- prepare phase (jobs/run-job.ts). The claim reads what was committed when the statement
-- began, which is never later than anything the check reads after it; rows touched since
-- then have a newer version and survive the job's settlement.
-- $1 text: lock namespace   $2 text: lock key (advisory-lock.sql)
-- $3 text: domain   $4 text: scope   $5 timestamptz: the job's start
-- The key's rows are found by the primary key and only then filtered on due_at (OFFSET 0 keeps
-- the filter out of the scan, so no plan reads the domain's due rows to find the key's: a
-- backlog of N due keys would cost N x N row reads).
-- Output: reason text, version text (a bigint), due_at timestamptz; one row with nulls when
-- nothing is due
WITH locked AS (
  SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))::text AS locked
)
SELECT d.reason, d.version::text AS version, d.due_at
  FROM locked
  LEFT JOIN LATERAL (
    SELECT reason, version, due_at
      FROM (SELECT reason, version, due_at
              FROM reclaim_deadlines
             WHERE domain = $3 AND company_id = $4
            OFFSET 0) AS key_rows
     WHERE due_at <= $5::timestamptz
  ) AS d ON true
