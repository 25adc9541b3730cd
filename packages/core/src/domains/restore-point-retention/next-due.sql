-- When a company's restore-point work is next due, after a batch.
-- $1 text: company id
-- $2 timestamptz: the clock's now
-- $3 timestamptz: now - capture grace (pending rows created before it are abandoned)
-- Output, one row:
--   due_now        boolean      some work is due already (a full batch, or work this batch created)
--   review_at      timestamptz  earliest future delete_after of an active row
--   pending_since  timestamptz  oldest pending row not yet abandoned (grace ends one grace later)
--   retry_at       timestamptz  when the next expiring, superseded or delete_requested row is due:
--                                its retry time, else when it entered that status (see due-work.sql)
-- Each part is an index range (see due-work.sql for the indexes), however many rows are due.
SELECT (EXISTS (SELECT 1 FROM execution_workspace_restore_points rp
                 WHERE rp.company_id = $1::uuid AND rp.status = 'active' AND rp.delete_after <= $2::timestamptz)
        OR EXISTS (SELECT 1 FROM execution_workspace_restore_points rp
                    WHERE rp.company_id = $1::uuid AND rp.status = 'pending' AND rp.created_at <= $3::timestamptz)
        -- min(), not EXISTS: the planner reads the first index entry for a min(), while an
        -- EXISTS over a big backlog looks cheap as a sequential scan, one that grows slower
        -- as deleted rows pile up in front of the rows still to do.
        OR COALESCE((SELECT min(COALESCE(rp.retry_at, rp.updated_at)) FROM execution_workspace_restore_points rp
                      WHERE rp.company_id = $1::uuid
                        AND rp.status IN ('expiring', 'superseded', 'delete_requested')) <= $2::timestamptz,
                    false)) AS due_now,
       (SELECT min(rp.delete_after) FROM execution_workspace_restore_points rp
         WHERE rp.company_id = $1::uuid AND rp.status = 'active'
           AND rp.delete_after > $2::timestamptz) AS review_at,
       (SELECT min(rp.created_at) FROM execution_workspace_restore_points rp
         WHERE rp.company_id = $1::uuid AND rp.status = 'pending'
           AND rp.created_at > $3::timestamptz) AS pending_since,
       (SELECT min(COALESCE(rp.retry_at, rp.updated_at)) FROM execution_workspace_restore_points rp
         WHERE rp.company_id = $1::uuid AND rp.status IN ('expiring', 'superseded', 'delete_requested')
           AND COALESCE(rp.retry_at, rp.updated_at) > $2::timestamptz) AS retry_at
