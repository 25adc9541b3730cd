-- Git worktree workspaces of a company by id, with what git cache expiration reads besides the
-- workspace facts (packages/core/src/workspaces/subject-facts.sql): the repository, base and
-- branch, and when anything last touched the workspace's issue tree (idle expiration).
-- $1 jsonb: array of workspace ids (text), $2 text: company id
-- Output, one row per workspace found:
--   id, company_id, project_id, source_issue_id, status, strategy_type, cwd, repo_url,
--   base_ref, branch_name, metadata
--   bound_open   an issue that is neither done nor cancelled is bound to the workspace
--                (execution_workspace_id), anywhere in the company
--   last_touch   the latest of: the workspace's last_used_at; updated_at of the issues of the source issue's tree and of the
--                issues bound to the workspace; created_at, started_at, finished_at of runs of
--                those issues (context_snapshot issueId, or the issue's checkout / execution run)
WITH RECURSIVE ws AS (
  SELECT w.* FROM execution_workspaces w
   WHERE w.company_id = $2::uuid
     AND w.id IN (SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb))
),
tree(ws_id, id) AS (
  SELECT ws.id, i.id FROM ws JOIN issues i ON i.id = ws.source_issue_id AND i.company_id = $2::uuid
  UNION
  SELECT t.ws_id, c.id
    FROM tree t
   CROSS JOIN LATERAL (SELECT k.id FROM issues k WHERE k.parent_id = t.id AND k.company_id = $2::uuid OFFSET 0) c
),
related(ws_id, id) AS (
  SELECT ws_id, id FROM tree
  UNION
  SELECT ws.id, i.id FROM ws JOIN issues i ON i.company_id = $2::uuid AND i.execution_workspace_id = ws.id
),
touches AS (
  SELECT ws.id AS ws_id, ws.last_used_at AS at FROM ws
  UNION ALL
  SELECT r.ws_id, i.updated_at FROM related r JOIN issues i ON i.id = r.id
  UNION ALL
  SELECT r.ws_id, GREATEST(h.created_at, h.started_at, h.finished_at)
    FROM related r JOIN issues i ON i.id = r.id
    JOIN heartbeat_runs h ON h.company_id = $2::uuid
     AND (h.context_snapshot ->> 'issueId' = r.id::text OR h.id = i.checkout_run_id OR h.id = i.execution_run_id)
)
SELECT ws.id::text AS id, ws.company_id::text AS company_id, ws.project_id::text AS project_id,
       ws.source_issue_id::text AS source_issue_id, ws.status, ws.strategy_type, ws.cwd, ws.repo_url,
       ws.base_ref, ws.branch_name, ws.metadata,
       EXISTS (SELECT 1 FROM issues b WHERE b.company_id = $2::uuid AND b.execution_workspace_id = ws.id
                  AND b.status NOT IN ('done', 'cancelled')) AS bound_open,
       (SELECT max(t.at) FROM touches t WHERE t.ws_id = ws.id) AS last_touch
  FROM ws
