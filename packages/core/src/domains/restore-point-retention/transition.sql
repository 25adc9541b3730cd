-- Moves rows from one status to another, only from the statuses given (a row that changed
-- meanwhile is left alone). Clears the error and retry time; `deleted` records deleted_at;
-- `delete_requested` and `deleted` clear delete_after.
-- $1 jsonb: array of row ids (text)
-- $2 jsonb: array of statuses a row may move from
-- $3 text: the new status
-- $4 timestamptz: the clock's now
-- Output: id text of each row moved
UPDATE execution_workspace_restore_points rp
   SET status = $3::text,
       last_error = NULL,
       retry_at = NULL,
       delete_after = CASE WHEN $3::text IN ('delete_requested', 'deleted') THEN NULL ELSE rp.delete_after END,
       deleted_at = CASE WHEN $3::text = 'deleted' THEN $4::timestamptz ELSE rp.deleted_at END,
       updated_at = $4::timestamptz
 WHERE rp.id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb)))
   AND rp.status = ANY (ARRAY(SELECT value FROM jsonb_array_elements_text($2::jsonb)))
RETURNING rp.id::text AS id
