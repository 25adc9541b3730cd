-- The ledger rows of one key that are due: what a job claims when it starts (deadlines.ts);
-- and, in the same round trip, the key's continuation cursors, which the job's walks read
-- next (jobs/cursors.ts).
-- $1 text: domain   $2 text: scope (company id or 'instance')   $3 timestamptz: the job's start
-- Output: a due row (cursor_name null): reason text, version text (a bigint), due_at
-- timestamptz; or a cursor (reason null): cursor_name text, cursor_value text
-- The key's rows by primary key, then filtered on due_at (as in lock-and-claim.sql).
SELECT reason, version::text AS version, due_at, NULL::text AS cursor_name, NULL::text AS cursor_value
  FROM (SELECT reason, version, due_at
          FROM reclaim_deadlines
         WHERE domain = $1 AND company_id = $2
        OFFSET 0) AS key_rows
 WHERE due_at <= $3::timestamptz
UNION ALL
SELECT NULL, NULL, NULL, name, value
  FROM reclaim_cursors
 WHERE domain = $1 AND company_id = $2
