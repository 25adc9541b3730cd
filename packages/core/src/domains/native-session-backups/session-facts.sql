-- Everything the expiry rules need to know about a batch of native sessions, in one query
-- (one round trip per batch, however many sessions). Also the final check after the
-- rename to .retiring: a run that appeared shows up in run_ids / unfinished_run.
-- $1 jsonb: array of {"scope": text, "companyId": uuid text, "sessionId": text,
--                     "runIds": [uuid text], "issueIds": [uuid text]} from control-plane state
-- Output, one row per input session:
--   scope
--   run_ids                the session's runs: session_id_before/after = sessionId in its
--                          company, plus the runIds its state lists (sorted)
--   unfinished_run         one of them is queued, scheduled_retry or running, or has no finished_at
--   issue_ids, open_issue  the issues it ran on (its runs' context_snapshot.issueId, plus
--                          the state's issueIds); one is neither done nor cancelled
--   last_issue_closed_at   the latest close (completed_at / cancelled_at, else updated_at)
--   finalization_unsettled a finalization of its runs has a lease owner, a next attempt, or a
--                          phase other than committed / terminal_failure without recovery state
--   recovery_in_progress   a finalization carries a recovery state other than blocked, or an
--                          active or escalated recovery action (evidence.runId) names one of its runs
--   lease_reference        an active, released, retained or pending_cleanup environment lease
--                          names the copy (metadata.nativeHarnessBackup.sessionScopeId = scope)
--   task_session_ids       agent task sessions pointing at the session
--                          (session_params_json.sessionId or session_display_id = sessionId)
-- Works on Paperclip's full tables and on Reclaim's mirror alike.
WITH sessions AS (
  SELECT s ->> 'scope' AS scope,
         (s ->> 'companyId')::uuid AS company_id,
         s ->> 'sessionId' AS session_id,
         COALESCE(s -> 'runIds', '[]'::jsonb) AS listed_runs,
         COALESCE(s -> 'issueIds', '[]'::jsonb) AS listed_issues
    FROM jsonb_array_elements($1::jsonb) s
),
runs AS (
  SELECT s.scope, r.id, r.status, r.finished_at, r.context_snapshot ->> 'issueId' AS issue_id
    FROM sessions s JOIN heartbeat_runs r ON r.company_id = s.company_id AND r.session_id_before = s.session_id
  UNION
  SELECT s.scope, r.id, r.status, r.finished_at, r.context_snapshot ->> 'issueId'
    FROM sessions s JOIN heartbeat_runs r ON r.company_id = s.company_id AND r.session_id_after = s.session_id
  UNION
  SELECT s.scope, r.id, r.status, r.finished_at, r.context_snapshot ->> 'issueId'
    FROM sessions s
    CROSS JOIN LATERAL jsonb_array_elements_text(s.listed_runs) listed(id)
    JOIN heartbeat_runs r ON r.id = listed.id::uuid AND r.company_id = s.company_id
),
session_issues AS (
  SELECT scope, issue_id::uuid AS id FROM runs
   WHERE issue_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
  UNION
  SELECT s.scope, listed.id::uuid FROM sessions s CROSS JOIN LATERAL jsonb_array_elements_text(s.listed_issues) listed(id)
),
run_state AS (
  SELECT scope,
         array_agg(id::text ORDER BY id) AS ids,
         bool_or(status IN ('queued', 'scheduled_retry', 'running') OR finished_at IS NULL) AS unfinished
    FROM runs GROUP BY scope
),
issue_state AS (
  SELECT si.scope,
         array_agg(i.id::text ORDER BY i.id) AS ids,
         bool_or(i.status NOT IN ('done', 'cancelled')) AS open_issue,
         max(CASE WHEN i.status = 'done' THEN COALESCE(i.completed_at, i.updated_at)
                  ELSE COALESCE(i.cancelled_at, i.updated_at) END) AS last_closed_at
    FROM session_issues si JOIN issues i ON i.id = si.id
   GROUP BY si.scope
),
finalization_state AS (
  -- Paperclip's columns (docs/paperclip-tables.md); recovery_state only where it exists.
  SELECT r.scope,
         bool_or(NOT (f.lease_owner IS NULL AND f.next_attempt_at IS NULL
                      AND (f.phase = 'committed'
                           OR (f.phase = 'terminal_failure'
                               AND COALESCE(to_jsonb(f) ->> 'recovery_state', 'blocked') = 'blocked')))) AS unsettled,
         bool_or(COALESCE(to_jsonb(f) ->> 'recovery_state', 'blocked') <> 'blocked') AS recovering
    FROM runs r JOIN native_run_finalizations f ON f.run_id = r.id
   GROUP BY r.scope
),
recovery_state AS (
  -- An open (active or escalated) recovery action naming one of the session's runs.
  SELECT DISTINCT r.scope
    FROM runs r
    JOIN sessions s ON s.scope = r.scope
    JOIN issue_recovery_actions a
      ON a.company_id = s.company_id AND a.evidence ->> 'runId' = r.id::text
   WHERE a.status IN ('active', 'escalated')
),
lease_state AS (
  SELECT DISTINCT s.scope
    FROM sessions s JOIN environment_leases l ON l.company_id = s.company_id
   WHERE l.status IN ('active', 'released', 'retained', 'pending_cleanup')
     AND l.metadata -> 'nativeHarnessBackup' ->> 'sessionScopeId' = s.scope
),
task_state AS (
  -- Two equality joins, not one OR: each can use an index on (company_id, key).
  SELECT scope, array_agg(id ORDER BY id) AS ids
    FROM (SELECT s.scope, t.id::text AS id
            FROM sessions s JOIN agent_task_sessions t
              ON t.company_id = s.company_id AND t.session_params_json ->> 'sessionId' = s.session_id
          UNION
          SELECT s.scope, t.id::text
            FROM sessions s JOIN agent_task_sessions t
              ON t.company_id = s.company_id AND t.session_display_id = s.session_id) matched
   GROUP BY scope
)
SELECT s.scope,
       COALESCE(rs.ids, '{}') AS run_ids,
       COALESCE(rs.unfinished, false) AS unfinished_run,
       COALESCE(iss.ids, '{}') AS issue_ids,
       COALESCE(iss.open_issue, false) AS open_issue,
       iss.last_closed_at AS last_issue_closed_at,
       COALESCE(fs.unsettled, false) AS finalization_unsettled,
       (COALESCE(fs.recovering, false) OR rc.scope IS NOT NULL) AS recovery_in_progress,
       ls.scope IS NOT NULL AS lease_reference,
       COALESCE(ts.ids, '{}') AS task_session_ids
  FROM sessions s
  LEFT JOIN run_state rs ON rs.scope = s.scope
  LEFT JOIN issue_state iss ON iss.scope = s.scope
  LEFT JOIN finalization_state fs ON fs.scope = s.scope
  LEFT JOIN recovery_state rc ON rc.scope = s.scope
  LEFT JOIN lease_state ls ON ls.scope = s.scope
  LEFT JOIN task_state ts ON ts.scope = s.scope
