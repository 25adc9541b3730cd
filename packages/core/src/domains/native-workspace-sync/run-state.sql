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
-- What the other tables say of each run: one lookup per run and table, through its index
-- (heartbeat_run_id; the lease's primary key), each folding that run's rows into its flags. A
-- flag is true when one of the run's rows matches, as an EXISTS would be (bool_or skips a null
-- condition; no row reads as false). OFFSET 0 keeps each lookup a lookup: a semi-join or hashed
-- subplan reads the whole table for every batch (the statement once took twelve EXISTS, which
-- PostgreSQL hashed: 5 full reads of environment_leases per batch).
facts AS (
  SELECT r.id,
         l.leases > 0 AS has_lease,
         COALESCE(l.local_lease, false) AS has_local_lease,
         COALESCE(l.active_lease, false) AS live_controller_lease,
         COALESCE(l.resume_or_cleanup, false) AS lease_resume_or_cleanup,
         d.destroyed AS referenced_lease_destroyed,
         COALESCE(f.owner_receipt, false) AS owner_receipt,
         COALESCE(f.unsettled, false) AS finalization_unsettled,
         w.pending AS retained_recovery_pending,
         h.pending AS adoption_pending
    FROM runs r
   CROSS JOIN LATERAL (
     SELECT count(*) AS leases,
            bool_or(l.provider IS NULL OR l.provider = 'local') AS local_lease,
            bool_or(l.status = 'active') AS active_lease,
            bool_or(COALESCE(l.metadata ? 'nativeWorkspaceExportResume', false)
                    OR l.cleanup_status IN ('pending', 'running', 'in_progress')) AS resume_or_cleanup
       FROM (SELECT * FROM environment_leases WHERE heartbeat_run_id = r.id OFFSET 0) AS l
   ) AS l
   -- The lease the sync reference names, by primary key: a name that is not a lower-case uuid's
   -- text is no lease id's text (only those are cast).
   CROSS JOIN LATERAL (
     SELECT count(*) > 0 AS destroyed
       FROM (SELECT 1 FROM environment_leases
              WHERE id = CASE WHEN r.sync_ref ->> 'leaseId' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                              THEN (r.sync_ref ->> 'leaseId')::uuid END
                AND status = 'destroyed'
             OFFSET 0) AS d
   ) AS d
   CROSS JOIN LATERAL (
     SELECT bool_or(f.lease_owner IS NOT NULL) AS owner_receipt,
            bool_or(NOT (f.lease_owner IS NULL AND f.next_attempt_at IS NULL
                         AND (f.phase = 'committed'
                              OR (f.phase = 'terminal_failure'
                                  AND COALESCE(to_jsonb(f) ->> 'recovery_state', 'blocked') = 'blocked')))) AS unsettled
       FROM (SELECT * FROM native_run_finalizations WHERE run_id = r.id OFFSET 0) AS f
   ) AS f
   CROSS JOIN LATERAL (
     SELECT count(*) > 0 AS pending
       FROM (SELECT 1 FROM retained_workspace_recoveries
              WHERE heartbeat_run_id = r.id
                AND status IN ('scheduled', 'running', 'awaiting_evidence', 'queued', 'recovering')
             OFFSET 0) AS w
   ) AS w
   CROSS JOIN LATERAL (
     SELECT count(*) > 0 AS pending
       FROM (SELECT 1 FROM historical_recovery_adoptions
              WHERE heartbeat_run_id = r.id AND status IN ('pending', 'running')
             OFFSET 0) AS h
   ) AS h
),
-- The open recovery actions of the batch's companies that name one of its runs, by run.
open_actions AS (
  SELECT a.evidence ->> 'runId' AS run_id,
         bool_or(a.cause LIKE 'native\_workspace\_%') AS export_active,
         bool_or(a.cause = 'native_execution_ownership_unverified'
                 OR a.evidence -> 'ownerVerified' = 'false'::jsonb) AS unverified
    FROM issue_recovery_actions a
   WHERE a.company_id IN (SELECT company_id FROM runs)
     AND a.status IN ('active', 'escalated')
     AND a.evidence ->> 'runId' IN (SELECT id::text FROM runs)
   GROUP BY a.evidence ->> 'runId'
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
       x.has_lease,
       x.has_local_lease,
       x.live_controller_lease,
       x.lease_resume_or_cleanup,
       x.referenced_lease_destroyed,
       x.owner_receipt,
       x.finalization_unsettled,
       COALESCE(a.export_active, false) AS export_active,
       COALESCE(a.unverified, false) AS unverified_recovery,
       x.retained_recovery_pending,
       x.adoption_pending,
       u.unwritten_tables
  FROM runs r
  JOIN facts x ON x.id = r.id
  LEFT JOIN open_actions a ON a.run_id = r.id::text
 CROSS JOIN (SELECT ARRAY(SELECT t.table_name
                            FROM reclaim_created_tables t
                           WHERE t.table_name = ANY($2::text[])
                             AND NOT EXISTS (SELECT 1 FROM reclaim_created_tables p
                                              WHERE p.table_name = 'heartbeat_runs')
                         ) AS unwritten_tables) AS u
