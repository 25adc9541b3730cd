-- Archives an open execution workspace as Paperclip's terminal reaper does
-- (server/src/services/execution-workspaces.ts): status archived, closed_at, cleanup_eligible_at
-- (kept when set), cleanup_reason, the lifecycle generation (the caller's read plus one: a
-- cleanup captured at an older generation then does nothing), the caller's metadata merged in. Only a row
-- that is still open and not waiting for a reopen to be consumed is archived. Run it holding
-- the workspace lifecycle lock.
-- $1 text: workspace id, $2 text: company id, $3 timestamptz: now, $4 text: cleanup reason,
-- $5 jsonb: metadata to merge (top-level keys replaced), $6 integer: the new lifecycle generation
-- Output: one row {id, metadata} when the row was archived, none otherwise.
UPDATE execution_workspaces w
   SET status = 'archived',
       closed_at = $3::timestamptz,
       cleanup_eligible_at = COALESCE(w.cleanup_eligible_at, $3::timestamptz),
       cleanup_reason = $4::text,
       metadata = (COALESCE(w.metadata, '{}'::jsonb) - 'reopenPendingConsumption' - 'reopenPendingConsumptionSince')
                  || jsonb_build_object('lifecycleGeneration', $6::integer)
                  || $5::jsonb,
       updated_at = $3::timestamptz
 WHERE w.id = $1::uuid AND w.company_id = $2::uuid
   AND w.status IN ('active', 'idle', 'in_review') AND w.closed_at IS NULL
   AND (w.metadata ->> 'reopenPendingConsumption') IS DISTINCT FROM 'true'
RETURNING w.id::text AS id, w.metadata
