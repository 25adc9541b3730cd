-- Makes a closed (archived or cleanup_failed) execution workspace active again, as Paperclip's
-- reopen publishes a rebuilt workspace: status active, closed_at, cleanup_reason and
-- cleanup_eligible_at cleared, last_used_at now, the lifecycle generation (the caller's read
-- plus one: a cleanup captured at the archive's generation then does nothing), metadata keys removed and
-- merged. With $6 set, the reopen-pending flag (reopenPendingConsumption and its timestamp)
-- is set in the same write, so no reaper archives the workspace again before the run or
-- comment that asked for the reopen uses it. Run it holding the workspace lifecycle lock.
-- $1 text: workspace id, $2 text: company id, $3 timestamptz: now, $4 jsonb: metadata to merge,
-- $5 jsonb: array of metadata keys to remove, $6 text: ISO time for the reopen-pending flag, or null,
-- $7 integer: the new lifecycle generation
-- Output: one row {id, metadata} when the row was closed and is now active, none otherwise.
UPDATE execution_workspaces w
   SET status = 'active',
       closed_at = NULL,
       cleanup_reason = NULL,
       cleanup_eligible_at = NULL,
       last_used_at = $3::timestamptz,
       metadata = (COALESCE(w.metadata, '{}'::jsonb) - ARRAY(SELECT jsonb_array_elements_text($5::jsonb)))
                  || jsonb_build_object('lifecycleGeneration', $7::integer)
                  || CASE WHEN $6::text IS NULL THEN '{}'::jsonb
                          ELSE jsonb_build_object('reopenPendingConsumption', true,
                                                  'reopenPendingConsumptionSince', $6::text) END
                  || $4::jsonb,
       updated_at = $3::timestamptz
 WHERE w.id = $1::uuid AND w.company_id = $2::uuid AND w.status IN ('archived', 'cleanup_failed')
RETURNING w.id::text AS id, w.metadata
