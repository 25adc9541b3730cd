-- Everything the removal rules need to know about the runs behind a batch of sync folders,
-- in one query (one round trip per batch, however many folders). Reads Paperclip's real
-- columns (docs/paperclip-tables.md); columns that only some Paperclip versions have are
-- read through to_jsonb(row), which yields null where the column does not exist.
-- $1 jsonb: array of run ids (text); ids that are not runs simply return no row
-- $2 text[]: the tables the rules read (rules.ts SOURCES)
-- Output, one row per existing run:
--   id, company_id, status, finished_at, process_pid, process_group_id, process_started_at
--   sync_ref_valid             runner_profile_json.nativeWorkspaceSync is a valid reference
--                              (schema paperclip.native-workspace-sync/v1, state prepared or
--                              finalized, a leaseId)
--   has_lease, has_local_lease any environment lease of the run / one on this host
--   live_controller_lease      an active environment lease of the run
--   lease_resume_or_cleanup    a lease of the run carries nativeWorkspaceExportResume or a cleanup in flight
--   referenced_lease_destroyed the lease the sync reference names was destroyed
--   owner_receipt              the run's finalization is owned (lease_owner set)
--   finalization_unsettled     its finalization has a lease owner or a next attempt, or a phase
--                              other than committed / terminal_failure without recovery state
--                              (recovery_state, where that column exists, null or 'blocked')
--   export_active              an active or escalated workspace export of the run: an
--                              issue_recovery_actions row with evidence.runId = the run and a
--                              native_workspace_* cause
--   unverified_recovery        an active or escalated recovery action of the run whose owner is
--                              unverified (cause native_execution_ownership_unverified, or
--                              evidence.ownerVerified false)
--   retained_recovery_pending  a retained workspace recovery is scheduled, running, awaiting
--                              evidence, queued or recovering
--   adoption_pending           historical recovery adoption has pending work
--   unwritten_tables           (same on every row) which of $2 nothing but Reclaim writes here:
--                              the rule of sources/unwritten-tables.sql, read in this round trip
WITH ids AS (
  SELECT DISTINCT value::uuid AS id FROM jsonb_array_elements_text($1::jsonb)
),
runs AS (
  -- Each run by its primary key, one lookup per id (OFFSET 0 keeps the lookup from being
  -- joined otherwise): a join could be planned as a scan of every run of the instance, and the
  -- statement is prepared once per connection, its plan kept.
  SELECT r.*, to_jsonb(r) -> 'runner_profile_json' -> 'nativeWorkspaceSync' AS sync_ref
    FROM ids
   CROSS JOIN LATERAL (SELECT * FROM heartbeat_runs WHERE id = ids.id OFFSET 0) AS r
),
open_actions AS (
  SELECT a.evidence ->> 'runId' AS run_id, a.cause, a.evidence
    FROM issue_recovery_actions a
   WHERE a.company_id IN (SELECT company_id FROM runs)
     AND a.status IN ('active', 'escalated')
     AND a.evidence ->> 'runId' IN (SELECT id::text FROM runs)
)
SELECT r.id::text AS id,
       r.company_id::text AS company_id,
       r.status,
       r.finished_at,
       r.process_pid,
       r.process_group_id,
       r.process_started_at,
       COALESCE(r.sync_ref ->> 'schema' = 'paperclip.native-workspace-sync/v1'
                AND r.sync_ref ->> 'state' IN ('prepared', 'finalized')
                AND jsonb_typeof(r.sync_ref -> 'leaseId') = 'string', false) AS sync_ref_valid,
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
                WHERE l.id::text = r.sync_ref ->> 'leaseId' AND l.status = 'destroyed') AS referenced_lease_destroyed,
       EXISTS (SELECT 1 FROM native_run_finalizations f
                WHERE f.run_id = r.id AND f.lease_owner IS NOT NULL) AS owner_receipt,
       EXISTS (SELECT 1 FROM native_run_finalizations f
                WHERE f.run_id = r.id
                  AND NOT (f.lease_owner IS NULL AND f.next_attempt_at IS NULL
                           AND (f.phase = 'committed'
                                OR (f.phase = 'terminal_failure'
                                    AND COALESCE(to_jsonb(f) ->> 'recovery_state', 'blocked') = 'blocked')))) AS finalization_unsettled,
       EXISTS (SELECT 1 FROM open_actions a
                WHERE a.run_id = r.id::text AND a.cause LIKE 'native\_workspace\_%') AS export_active,
       EXISTS (SELECT 1 FROM open_actions a
                WHERE a.run_id = r.id::text
                  AND (a.cause = 'native_execution_ownership_unverified'
                       OR a.evidence -> 'ownerVerified' = 'false'::jsonb)) AS unverified_recovery,
       EXISTS (SELECT 1 FROM retained_workspace_recoveries w
                WHERE w.heartbeat_run_id = r.id
                  AND w.status IN ('scheduled', 'running', 'awaiting_evidence', 'queued', 'recovering')) AS retained_recovery_pending,
       EXISTS (SELECT 1 FROM historical_recovery_adoptions h
                WHERE h.heartbeat_run_id = r.id AND h.status IN ('pending', 'running')) AS adoption_pending,
       u.unwritten_tables
  FROM runs r
 CROSS JOIN (SELECT ARRAY(SELECT t.table_name
                            FROM reclaim_created_tables t
                           WHERE t.table_name = ANY($2::text[])
                             AND NOT EXISTS (SELECT 1 FROM reclaim_created_tables p
                                              WHERE p.table_name = 'heartbeat_runs')
                         ) AS unwritten_tables) AS u
