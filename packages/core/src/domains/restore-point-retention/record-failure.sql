-- Records failed hooks or deletions: the error, and when to try again.
-- $1 jsonb: [{"id", "error"}]
-- $2 jsonb: array of statuses a row must still have
-- $3 timestamptz: retry time
-- $4 timestamptz: the clock's now
-- Output: id text of each row updated
UPDATE execution_workspace_restore_points rp
   SET last_error = r.error, retry_at = $3::timestamptz, updated_at = $4::timestamptz
  FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, error text)
 WHERE rp.id = r.id
   AND rp.status = ANY (ARRAY(SELECT value FROM jsonb_array_elements_text($2::jsonb)))
RETURNING rp.id::text AS id
