-- Records review outcomes of active rows: their expiry time, or NULL while the tree is open.
-- $1 jsonb: [{"id", "deleteAfter": timestamptz or null}]
-- $2 timestamptz: the clock's now
-- Output: id text of each row changed (still active)
UPDATE execution_workspace_restore_points rp
   SET delete_after = r."deleteAfter", updated_at = $2::timestamptz
  FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, "deleteAfter" timestamptz)
 WHERE rp.id = r.id AND rp.status = 'active'
RETURNING rp.id::text AS id
