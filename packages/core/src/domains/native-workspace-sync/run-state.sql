-- Everything the removal rules need to know about the runs behind a batch of sync folders,
-- in one query (one round trip per batch, however many folders).
-- $1 jsonb: array of run ids (text); ids that are not runs simply return no row
-- Output, one row per existing run:
--   id, company_id, status, finished_at, process_pid, process_group_id, process_started_at
--   sync_ref_valid             context_snapshot.nativeWorkspaceSync names this run's folder
--   has_lease, has_local_lease any environment lease of the run / one on this host
--   live_controller_lease      an active environment lease of the run
--   lease_resume_or_cleanup    a lease of the run carries nativeWorkspaceExportResume or a cleanup in flight
--   referenced_lease_destroyed the lease the sync reference names was destroyed
--   owner_receipt              a finalization owner receipt exists
--   finalization_unsettled     a finalization with a lease owner, a scheduled retry, or a status
--                              other than committed / blocked / terminal_failure without recovery state
--   export_active              an active or escalated workspace export names the run
--   unverified_recovery        an unresolved recovery action whose owner was never verified names the run
--   retained_recovery_pending  a retained workspace recovery is scheduled, running, awaiting
--                              evidence, queued or recovering
--   adoption_pending           historical recovery adoption has pending work
-- Works on Paperclip's full tables and on Reclaim's mirror alike.
WITH ids AS (
  SELECT DISTINCT value::uuid AS id FROM jsonb_array_elements_text($1::jsonb)
)
SELECT r.id::text AS id,
       r.company_id::text AS company_id,
       r.status,
       r.finished_at,
       r.process_pid,
       r.process_group_id,
       r.process_started_at,
       COALESCE(r.context_snapshot -> 'nativeWorkspaceSync' ->> 'runId' = r.id::text, false) AS sync_ref_valid,
       EXISTS (SELECT 1 FROM environment_leases l WHERE l.heartbeat_run_id = r.id) AS has_lease,
       EXISTS (SELECT 1 FROM environment_leases l
                WHERE l.heartbeat_run_id = r.id AND (l.provider IS NULL OR l.provider = 'local')) AS has_local_lease,
       EXISTS (SELECT 1 FROM environment_leases l
                WHERE l.heartbeat_run_id = r.id AND l.status = 'active') AS live_controller_lease,
       EXISTS (SELECT 1 FROM environment_leases l
                WHERE l.heartbeat_run_id = r.id
                  AND (COALESCE(l.metadata ? 'nativeWorkspaceExportResume', false)
                       OR l.cleanup_status IN ('pending', 'running', 'in_progress'))) AS lease_resume_or_cleanup,
       EXISTS (SELECT 1 FROM environment_leases l
                WHERE l.id::text = r.context_snapshot -> 'nativeWorkspaceSync' ->> 'leaseId'
                  AND l.status = 'destroyed') AS referenced_lease_destroyed,
       EXISTS (SELECT 1 FROM native_run_finalizations f
                WHERE f.heartbeat_run_id = r.id AND f.owner_receipt IS NOT NULL) AS owner_receipt,
       EXISTS (SELECT 1 FROM native_run_finalizations f
                WHERE f.heartbeat_run_id = r.id
                  AND NOT (f.lease_owner IS NULL AND f.scheduled_retry_at IS NULL
                           AND (f.status IN ('committed', 'blocked')
                                OR (f.status = 'terminal_failure' AND f.recovery_state IS NULL)))) AS finalization_unsettled,
       EXISTS (SELECT 1 FROM native_workspace_exports e
                WHERE e.heartbeat_run_id = r.id AND e.status IN ('active', 'escalated')) AS export_active,
       EXISTS (SELECT 1 FROM native_run_recovery_actions a
                WHERE a.heartbeat_run_id = r.id AND a.owner_verified_at IS NULL AND a.resolved_at IS NULL) AS unverified_recovery,
       EXISTS (SELECT 1 FROM retained_workspace_recoveries w
                WHERE w.heartbeat_run_id = r.id
                  AND w.status IN ('scheduled', 'running', 'awaiting_evidence', 'queued', 'recovering')) AS retained_recovery_pending,
       EXISTS (SELECT 1 FROM historical_recovery_adoptions h
                WHERE h.heartbeat_run_id = r.id AND h.status IN ('pending', 'running')) AS adoption_pending
  FROM heartbeat_runs r
  JOIN ids ON ids.id = r.id
