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
-- Reads, each by the batch's keys (OFFSET 0 keeps a lookup from being planned as a join over the
-- whole table): the workspaces and the tree's root issues by primary key; children by parent;
-- the issues bound to the batch's workspaces by (company_id, execution_workspace_id), Paperclip's
-- issues_company_execution_workspace_idx; the issues' checkout and execution runs by primary
-- key; and the runs naming one of the issues in context_snapshot among the company's runs, read
-- once a batch (no index has that key). One join of runs on "context issue OR checkout run OR
-- execution run" read the company's runs once per related issue: 146-205 ms a batch of 50
-- workspaces at 25,000 runs a company. A run found two ways counts twice in a max() alike.
WITH RECURSIVE ws AS (
  SELECT w.*
    FROM (SELECT DISTINCT id FROM unnest(ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb))) AS u(id)) k
   CROSS JOIN LATERAL (SELECT * FROM execution_workspaces w
                        WHERE w.id = k.id AND w.company_id = $2::uuid OFFSET 0) w
),
tree(ws_id, id) AS (
  SELECT ws.id, i.id
    FROM ws
   CROSS JOIN LATERAL (SELECT k.id FROM issues k
                        WHERE k.id = ws.source_issue_id AND k.company_id = $2::uuid OFFSET 0) i
  UNION
  SELECT t.ws_id, c.id
    FROM tree t
   CROSS JOIN LATERAL (SELECT k.id FROM issues k WHERE k.parent_id = t.id AND k.company_id = $2::uuid OFFSET 0) c
),
bound AS (
  SELECT b.id, b.execution_workspace_id, b.status
    FROM issues b
   WHERE b.company_id = $2::uuid
     AND b.execution_workspace_id = ANY (ARRAY(SELECT id FROM ws))
  OFFSET 0
),
related(ws_id, id) AS (
  SELECT ws_id, id FROM tree
  UNION
  SELECT execution_workspace_id, id FROM bound
),
related_issues AS (
  SELECT r.ws_id, i.id, i.updated_at, i.checkout_run_id, i.execution_run_id
    FROM related r
   CROSS JOIN LATERAL (SELECT k.id, k.updated_at, k.checkout_run_id, k.execution_run_id
                         FROM issues k WHERE k.id = r.id OFFSET 0) i
),
issue_runs AS (
  SELECT h.context_snapshot ->> 'issueId' AS issue_id, GREATEST(h.created_at, h.started_at, h.finished_at) AS at
    FROM heartbeat_runs h
   WHERE h.company_id = $2::uuid
     AND h.context_snapshot ->> 'issueId' = ANY (ARRAY(SELECT DISTINCT id::text FROM related))
  OFFSET 0
),
touches AS (
  SELECT ws.id AS ws_id, ws.last_used_at AS at FROM ws
  UNION ALL
  SELECT ws_id, updated_at FROM related_issues
  UNION ALL
  SELECT r.ws_id, h.at FROM related_issues r JOIN issue_runs h ON h.issue_id = r.id::text
  UNION ALL
  SELECT r.ws_id, GREATEST(h.created_at, h.started_at, h.finished_at)
    FROM related_issues r
   CROSS JOIN LATERAL (SELECT k.created_at, k.started_at, k.finished_at FROM heartbeat_runs k
                        WHERE k.id IN (r.checkout_run_id, r.execution_run_id) AND k.company_id = $2::uuid
                       OFFSET 0) h
),
last_touch AS (
  SELECT ws_id, max(at) AS at FROM touches GROUP BY ws_id
)
SELECT ws.id::text AS id, ws.company_id::text AS company_id, ws.project_id::text AS project_id,
       ws.source_issue_id::text AS source_issue_id, ws.status, ws.strategy_type, ws.cwd, ws.repo_url,
       ws.base_ref, ws.branch_name, ws.metadata,
       EXISTS (SELECT 1 FROM bound b WHERE b.execution_workspace_id = ws.id
                  AND b.status NOT IN ('done', 'cancelled')) AS bound_open,
       t.at AS last_touch
  FROM ws
  LEFT JOIN last_touch t ON t.ws_id = ws.id
