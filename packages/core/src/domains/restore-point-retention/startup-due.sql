-- At start-up: every company with restore-point work, and when its earliest work is due
-- (possibly in the past: then it is due now). Covers rows whose notification was missed
-- while no scheduler listened, and expiring rows whose hook a restart interrupted.
-- $1 bigint: capture grace in milliseconds
-- Output: company_id text, due_at timestamptz
SELECT w.company_id::text AS company_id, min(w.due_at) AS due_at
  FROM (
    SELECT rp.company_id, rp.delete_after AS due_at
      FROM execution_workspace_restore_points rp
     WHERE rp.status = 'active' AND rp.delete_after IS NOT NULL
    UNION ALL
    SELECT rp.company_id, rp.created_at + $1::bigint * interval '1 millisecond'
      FROM execution_workspace_restore_points rp
     WHERE rp.status = 'pending'
    UNION ALL
    SELECT rp.company_id, COALESCE(rp.retry_at, rp.updated_at)
      FROM execution_workspace_restore_points rp
     WHERE rp.status IN ('expiring', 'superseded', 'delete_requested')
  ) w
 GROUP BY w.company_id
