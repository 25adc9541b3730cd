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
-- Reads: runs, issues and finalizations by primary key; runs by session (session_id_before /
-- _after), open recovery actions by run, leases by the copy's scope and task sessions by
-- session among the batch's companies' rows (no index has those keys), each once a batch, as an
-- array of keys the lookup takes (OFFSET 0 keeps each from being planned as a join reading the
-- whole table: the joins read every run, issue, finalization, action, lease and task session of
-- the instance, 60,000 runs for a batch owning 1,400). native-session-backups.queries.test.
WITH sessions AS (
  SELECT s ->> 'scope' AS scope,
         (s ->> 'companyId')::uuid AS company_id,
         s ->> 'sessionId' AS session_id,
         COALESCE(s -> 'runIds', '[]'::jsonb) AS listed_runs,
         COALESCE(s -> 'issueIds', '[]'::jsonb) AS listed_issues
    FROM jsonb_array_elements($1::jsonb) s
),
keys AS (
  SELECT array_agg(DISTINCT company_id) AS companies,
         array_agg(DISTINCT session_id) AS session_ids,
         array_agg(DISTINCT scope) AS scopes
    FROM sessions
),
listed_runs AS (
  SELECT s.scope, s.company_id, listed.id::uuid AS id
    FROM sessions s CROSS JOIN LATERAL jsonb_array_elements_text(s.listed_runs) listed(id)
),
runs AS (
  -- The batch's companies' runs read once for both session columns; a run joins each session
  -- it names (before, after, or both: once).
  SELECT s.scope, r.id, r.company_id, r.status, r.finished_at, r.issue_id
    FROM (SELECT h.id, h.company_id, h.session_id_before, h.session_id_after, h.status, h.finished_at,
                 h.context_snapshot ->> 'issueId' AS issue_id
            FROM heartbeat_runs h
           WHERE h.company_id = ANY ((SELECT companies FROM keys)::uuid[])
             AND (h.session_id_before = ANY ((SELECT session_ids FROM keys)::text[])
                  OR h.session_id_after = ANY ((SELECT session_ids FROM keys)::text[]))
          OFFSET 0) r
    JOIN sessions s ON s.company_id = r.company_id AND s.session_id IN (r.session_id_before, r.session_id_after)
  UNION
  SELECT l.scope, r.id, r.company_id, r.status, r.finished_at, r.issue_id
    FROM (SELECT h.id, h.company_id, h.status, h.finished_at, h.context_snapshot ->> 'issueId' AS issue_id
            FROM heartbeat_runs h
           WHERE h.id = ANY ((SELECT array_agg(DISTINCT id) FROM listed_runs)::uuid[])
          OFFSET 0) r
    JOIN listed_runs l ON l.id = r.id AND l.company_id = r.company_id
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
    FROM session_issues si
    JOIN (SELECT k.id, k.status, k.completed_at, k.cancelled_at, k.updated_at
            FROM issues k
           WHERE k.id = ANY ((SELECT array_agg(DISTINCT id) FROM session_issues)::uuid[])
          OFFSET 0) i ON i.id = si.id
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
    FROM runs r
    JOIN (SELECT * FROM native_run_finalizations
           WHERE run_id = ANY ((SELECT array_agg(DISTINCT id) FROM runs)::uuid[])
          OFFSET 0) f ON f.run_id = r.id
   GROUP BY r.scope
),
recovery_state AS (
  -- An open (active or escalated) recovery action naming one of the session's runs, of the
  -- session's company: every run of a session is of the session's company (each way of
  -- finding one requires it), so the run's company_id stands for the session's. (The
  -- original joined the sessions again by scope: the same, unless one scope came twice in a
  -- batch, for two companies.) Joined by equality on the run's key, which young tables' row
  -- estimates do not turn into a nested loop comparing every run with every session.
  SELECT DISTINCT r.scope
    FROM runs r
    JOIN (SELECT a.company_id, a.evidence ->> 'runId' AS run_id
            FROM issue_recovery_actions a
           WHERE a.company_id = ANY ((SELECT companies FROM keys)::uuid[])
             AND a.evidence ->> 'runId' = ANY ((SELECT array_agg(DISTINCT id::text) FROM runs)::text[])
             AND a.status IN ('active', 'escalated')
          OFFSET 0) a
      ON a.run_id = r.id::text AND a.company_id = r.company_id
),
lease_state AS (
  SELECT DISTINCT s.scope
    FROM sessions s
    JOIN (SELECT l.company_id, l.metadata -> 'nativeHarnessBackup' ->> 'sessionScopeId' AS scope
            FROM environment_leases l
           WHERE l.company_id = ANY ((SELECT companies FROM keys)::uuid[])
             AND l.metadata -> 'nativeHarnessBackup' ->> 'sessionScopeId' = ANY ((SELECT scopes FROM keys)::text[])
             AND l.status IN ('active', 'released', 'retained', 'pending_cleanup')
          OFFSET 0) l
      ON l.company_id = s.company_id AND l.scope = s.scope
),
task_state AS (
  SELECT scope, array_agg(id ORDER BY id) AS ids
    FROM (SELECT s.scope, t.id::text AS id
            FROM sessions s
            JOIN (SELECT t.id, t.company_id, t.session_params_json ->> 'sessionId' AS session_id
                    FROM agent_task_sessions t
                   WHERE t.company_id = ANY ((SELECT companies FROM keys)::uuid[])
                     AND t.session_params_json ->> 'sessionId' = ANY ((SELECT session_ids FROM keys)::text[])
                  OFFSET 0) t
              ON t.company_id = s.company_id AND t.session_id = s.session_id
          UNION
          SELECT s.scope, t.id::text
            FROM sessions s
            JOIN (SELECT t.id, t.company_id, t.session_display_id AS session_id
                    FROM agent_task_sessions t
                   WHERE t.company_id = ANY ((SELECT companies FROM keys)::uuid[])
                     AND t.session_display_id = ANY ((SELECT session_ids FROM keys)::text[])
                  OFFSET 0) t
              ON t.company_id = s.company_id AND t.session_id = s.session_id) matched
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
