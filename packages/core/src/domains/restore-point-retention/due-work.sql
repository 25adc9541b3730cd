-- One batch of a company's due restore-point work, locked for this job's transaction.
-- Due: an `active` row whose delete_after has passed (review), a `pending` row created
-- before the capture grace (abandoned), and an `expiring` row (expiry hook), a `superseded`
-- or a `delete_requested` row (object deletion) once COALESCE(retry_at, updated_at) has
-- passed: its retry time after a failure, else when it entered that status (a row stamped
-- by a clock ahead of ours is due when our clock gets there: next-due.sql schedules it).
-- Oldest due first. The issues trigger locks due rows too, so an issue change waits for
-- this batch and re-marks what it cleared. The batch itself never waits: rows another
-- transaction holds (an issue change, an API transition) are skipped, and that transaction
-- wakes the worker when it commits (the trigger's NOTIFY, the route's deadline). So a review
-- can never be part of a lock cycle with Paperclip's transactions, whatever they change:
-- only the issue change ever waits, and only for this short transaction. The conditions
-- are repeated on the locked rows, so a row that changed before we locked it is re-judged
-- or left out.
-- $1 text: company id
-- $2 timestamptz: the clock's now
-- $3 timestamptz: pending rows created before this are abandoned (now - capture grace)
-- $4 int: batch size
-- Output: the row's columns (see rules.ts DueRow) and `work`: review | abandoned | hook | delete
WITH due AS (
  -- Each kind of work in its own index order with its own limit, so a company with many
  -- due rows costs one short index range per batch, not a sort of all of them: reviews by
  -- (company_id, status, delete_after); hooks and deletions by the partial index
  -- (company_id, COALESCE(retry_at, updated_at), id) of migration 20261203020000, whose
  -- expression and status list these conditions must repeat exactly to use it. Pending rows
  -- are few (captures in progress): found by (company_id, status), sorted.
  (SELECT rp.id, rp.delete_after AS due_at
     FROM execution_workspace_restore_points rp
    WHERE rp.company_id = $1::uuid AND rp.status = 'active' AND rp.delete_after <= $2::timestamptz
    ORDER BY rp.delete_after
    LIMIT $4::int)
  UNION ALL
  (SELECT rp.id, rp.created_at
     FROM execution_workspace_restore_points rp
    WHERE rp.company_id = $1::uuid AND rp.status = 'pending' AND rp.created_at <= $3::timestamptz
    ORDER BY rp.created_at
    LIMIT $4::int)
  UNION ALL
  (SELECT rp.id, COALESCE(rp.retry_at, rp.updated_at)
     FROM execution_workspace_restore_points rp
    WHERE rp.company_id = $1::uuid
      AND rp.status IN ('expiring', 'superseded', 'delete_requested')
      AND COALESCE(rp.retry_at, rp.updated_at) <= $2::timestamptz
    ORDER BY COALESCE(rp.retry_at, rp.updated_at), rp.id
    LIMIT $4::int)
  ORDER BY due_at, id
  LIMIT $4::int
)
SELECT rp.id::text AS id,
       rp.company_id::text AS company_id,
       rp.execution_workspace_id::text AS execution_workspace_id,
       rp.source_issue_id::text AS source_issue_id,
       rp.generation,
       rp.kind,
       rp.checkout_name,
       rp.status,
       rp.storage_provider,
       rp.storage_key,
       rp.byte_size,
       rp.delete_after,
       rp.activated_at,
       rp.created_at,
       CASE rp.status
         WHEN 'active' THEN 'review'
         WHEN 'pending' THEN 'abandoned'
         WHEN 'expiring' THEN 'hook'
         ELSE 'delete'
       END AS work
  FROM execution_workspace_restore_points rp
 WHERE rp.id IN (SELECT id FROM due)
   AND ((rp.status = 'active' AND rp.delete_after <= $2::timestamptz)
        OR (rp.status = 'pending' AND rp.created_at <= $3::timestamptz)
        OR (rp.status IN ('expiring', 'superseded', 'delete_requested')
            AND COALESCE(rp.retry_at, rp.updated_at) <= $2::timestamptz))
 ORDER BY rp.id
   FOR UPDATE OF rp SKIP LOCKED
