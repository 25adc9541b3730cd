-- The ledger rows of one key that are due: what a job claims when it starts (deadlines.ts).
-- $1 text: domain   $2 text: scope (company id or 'instance')   $3 timestamptz: the job's start
-- Output: reason text, version text (a bigint), due_at timestamptz
-- The key's rows by primary key, then filtered on due_at (as in lock-and-claim.sql).
SELECT reason, version::text AS version, due_at
  FROM (SELECT reason, version, due_at
          FROM reclaim_deadlines
         WHERE domain = $1 AND company_id = $2
        OFFSET 0) AS key_rows
 WHERE due_at <= $3::timestamptz
