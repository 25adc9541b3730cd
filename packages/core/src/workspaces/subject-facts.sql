-- What a workspace's expiration and reopen need to know of Paperclip's rows, for a batch of
-- subjects in one query. A subject is an issue tree (the root issue and all its descendants;
-- a parent cycle ends the walk) together with the execution workspace rows that belong to
-- it: for an open workspace row, its source issue and that row; for a task directory, the
-- directory's issue and every workspace row of the directory.
-- Works on Paperclip's full tables and on Reclaim's mirror alike (native_run_finalizations'
-- recovery_state, which only some Paperclip versions have, is read through to_jsonb(row)).
-- $1 jsonb: array of {"key": text, "rootIssueId": uuid text, "workspaceIds": [uuid text]}
-- $2 text: company id
-- $3 timestamptz: now (runtime leases live until expires_at)
-- Output, one row per subject:
--   key
--   root_exists        the root issue exists in the company
--   root_bound         the root issue's execution_workspace_id is one of the workspaceIds
--   tree_open          some issue of the tree is neither done nor cancelled
--   tree_latest_close  latest completed_at / cancelled_at (updated_at when unset) of the tree
--   users_open, users_latest_close
--                      the same over the issues that use the workspaces: the root, and each
--                      descendant bound to one (execution_workspace_id) or selecting one as its
--                      current or pending existing workspace (execution_workspace_settings
--                      existingWorkspaceId / pendingExistingWorkspaceId)
--   bound_issue_ids    issues anywhere in the company bound to one of the workspaces
--   live_run           a run of an issue of the tree or bound to a workspace (context_snapshot
--                      issueId, or the issue's checkout / execution run) is queued,
--                      scheduled_retry or running, or has no finished_at
--   unsettled_finalization  a native run finalization of such an issue or run has a lease
--                      owner, a next attempt, or a phase other than committed /
--                      terminal_failure without recovery state
--   live_lease         an environment lease that is not released, destroyed, expired or failed
--                      belongs to a run of the tree, an issue of the tree or a workspace; or a
--                      workspace has a runtime lease that has not expired
--   live_service       a runtime service that is not stopped belongs to an issue of the tree
--                      or a workspace
--   open_recovery      a recovery action of an issue of the tree is active or escalated
WITH RECURSIVE subjects AS (
  SELECT s ->> 'key' AS key,
         (s ->> 'rootIssueId')::uuid AS root,
         ARRAY(SELECT value::uuid FROM jsonb_array_elements_text(COALESCE(s -> 'workspaceIds', '[]'::jsonb))) AS ws
    FROM jsonb_array_elements($1::jsonb) s
),
tree(key, id) AS (
  SELECT s.key, i.id FROM subjects s JOIN issues i ON i.id = s.root AND i.company_id = $2::uuid
  UNION
  SELECT t.key, c.id
    FROM tree t
   CROSS JOIN LATERAL (SELECT k.id FROM issues k WHERE k.parent_id = t.id AND k.company_id = $2::uuid OFFSET 0) c
),
tree_issues AS (
  SELECT t.key, i.id, i.status NOT IN ('done', 'cancelled') AS open,
         CASE i.status
           WHEN 'done' THEN COALESCE(i.completed_at, i.updated_at)
           WHEN 'cancelled' THEN COALESCE(i.cancelled_at, i.updated_at)
         END AS closed_at,
         i.id = s.root
           OR i.execution_workspace_id = ANY (s.ws)
           OR (i.execution_workspace_settings ->> 'existingWorkspaceId') = ANY (s.ws::text[])
           OR (i.execution_workspace_settings ->> 'pendingExistingWorkspaceId') = ANY (s.ws::text[])
           AS uses
    FROM tree t JOIN issues i ON i.id = t.id JOIN subjects s ON s.key = t.key
),
bound AS (
  SELECT s.key, i.id FROM subjects s
    JOIN issues i ON i.company_id = $2::uuid AND i.execution_workspace_id = ANY (s.ws)
),
related AS (
  SELECT key, id FROM tree_issues UNION SELECT key, id FROM bound
),
related_runs AS (
  SELECT r.key, x.run_id
    FROM related r JOIN issues i ON i.id = r.id
   CROSS JOIN LATERAL (VALUES (i.checkout_run_id::text), (i.execution_run_id::text)) x(run_id)
   WHERE x.run_id IS NOT NULL
),
live_runs AS (
  SELECT h.id, h.context_snapshot ->> 'issueId' AS issue_id
    FROM heartbeat_runs h
   WHERE h.company_id = $2::uuid
     AND (h.status IN ('queued', 'scheduled_retry', 'running') OR h.finished_at IS NULL)
),
live_leases AS (
  SELECT l.execution_workspace_id, l.issue_id, l.heartbeat_run_id, h.context_snapshot ->> 'issueId' AS run_issue_id
    FROM environment_leases l LEFT JOIN heartbeat_runs h ON h.id = l.heartbeat_run_id
   WHERE l.company_id = $2::uuid AND l.status NOT IN ('released', 'destroyed', 'expired', 'failed')
),
unsettled AS (
  SELECT f.run_id, f.issue_id, h.context_snapshot ->> 'issueId' AS run_issue_id
    FROM native_run_finalizations f LEFT JOIN heartbeat_runs h ON h.id = f.run_id
   WHERE f.company_id = $2::uuid
     AND NOT (f.lease_owner IS NULL AND f.next_attempt_at IS NULL
              AND (f.phase = 'committed'
                   OR (f.phase = 'terminal_failure'
                       AND COALESCE(to_jsonb(f) ->> 'recovery_state', 'blocked') = 'blocked')))
)
SELECT s.key,
       EXISTS (SELECT 1 FROM issues i WHERE i.id = s.root AND i.company_id = $2::uuid) AS root_exists,
       EXISTS (SELECT 1 FROM issues i WHERE i.id = s.root AND i.company_id = $2::uuid
                  AND i.execution_workspace_id = ANY (s.ws)) AS root_bound,
       COALESCE((SELECT bool_or(t.open) FROM tree_issues t WHERE t.key = s.key), false) AS tree_open,
       (SELECT max(t.closed_at) FROM tree_issues t WHERE t.key = s.key) AS tree_latest_close,
       COALESCE((SELECT bool_or(t.open) FROM tree_issues t WHERE t.key = s.key AND t.uses), false) AS users_open,
       (SELECT max(t.closed_at) FROM tree_issues t WHERE t.key = s.key AND t.uses) AS users_latest_close,
       ARRAY(SELECT b.id::text FROM bound b WHERE b.key = s.key ORDER BY b.id) AS bound_issue_ids,
       EXISTS (SELECT 1 FROM live_runs h
                WHERE h.issue_id IN (SELECT r.id::text FROM related r WHERE r.key = s.key)
                   OR h.id::text IN (SELECT rr.run_id FROM related_runs rr WHERE rr.key = s.key)) AS live_run,
       EXISTS (SELECT 1 FROM unsettled f
                WHERE f.issue_id IN (SELECT r.id FROM related r WHERE r.key = s.key)
                   OR f.run_issue_id IN (SELECT r.id::text FROM related r WHERE r.key = s.key)
                   OR f.run_id::text IN (SELECT rr.run_id FROM related_runs rr WHERE rr.key = s.key)) AS unsettled_finalization,
       EXISTS (SELECT 1 FROM live_leases l
                WHERE l.execution_workspace_id = ANY (s.ws)
                   OR l.issue_id IN (SELECT r.id FROM related r WHERE r.key = s.key)
                   OR l.run_issue_id IN (SELECT r.id::text FROM related r WHERE r.key = s.key)
                   OR l.heartbeat_run_id::text IN (SELECT rr.run_id FROM related_runs rr WHERE rr.key = s.key))
         OR EXISTS (SELECT 1 FROM execution_workspace_runtime_leases rl
                     WHERE rl.company_id = $2::uuid AND rl.execution_workspace_id = ANY (s.ws)
                       AND rl.expires_at > $3::timestamptz) AS live_lease,
       EXISTS (SELECT 1 FROM workspace_runtime_services w
                WHERE w.company_id = $2::uuid AND w.status <> 'stopped'
                  AND (w.execution_workspace_id = ANY (s.ws)
                       OR w.issue_id IN (SELECT r.id FROM related r WHERE r.key = s.key))) AS live_service,
       EXISTS (SELECT 1 FROM issue_recovery_actions a
                WHERE a.company_id = $2::uuid AND a.status IN ('active', 'escalated')
                  AND a.source_issue_id IN (SELECT r.id FROM related r WHERE r.key = s.key)) AS open_recovery
  FROM subjects s
