-- Merges keys into an execution workspace's metadata (top-level keys replaced), whatever its
-- status. Run it holding the workspace lifecycle lock.
-- $1 text: workspace id, $2 text: company id, $3 timestamptz: now, $4 jsonb: metadata to merge
-- Output: one row {id, metadata} when the row exists.
UPDATE execution_workspaces w
   SET metadata = COALESCE(w.metadata, '{}'::jsonb) || $4::jsonb, updated_at = $3::timestamptz
 WHERE w.id = $1::uuid AND w.company_id = $2::uuid
RETURNING w.id::text AS id, w.metadata
