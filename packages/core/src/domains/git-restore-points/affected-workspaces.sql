-- The git worktree workspaces a change may concern: those named ($3), each issue's own
-- workspace (execution_workspace_id, or the existing / pending workspace it selects), and the
-- workspaces whose source issue is one of the issues or one of their ancestors (their trees
-- contain it). A parent cycle ends the walk.
-- $1 text: company id, $2 jsonb: array of issue ids (text), $3 jsonb: array of workspace ids (text)
-- Output: id (text), one row per workspace
WITH RECURSIVE up(id, parent_id) AS (
  SELECT i.id, i.parent_id FROM issues i
   WHERE i.company_id = $1::uuid AND i.id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($2::jsonb)))
  UNION
  SELECT p.id, p.parent_id FROM up JOIN issues p ON p.id = up.parent_id AND p.company_id = $1::uuid
),
own AS (
  SELECT i.execution_workspace_id AS id FROM issues i
   WHERE i.company_id = $1::uuid AND i.id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($2::jsonb)))
  UNION
  SELECT (i.execution_workspace_settings ->> 'existingWorkspaceId')::uuid FROM issues i
   WHERE i.company_id = $1::uuid AND i.id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($2::jsonb)))
     AND (i.execution_workspace_settings ->> 'existingWorkspaceId') ~ '^[0-9a-fA-F-]{36}$'
  UNION
  SELECT (i.execution_workspace_settings ->> 'pendingExistingWorkspaceId')::uuid FROM issues i
   WHERE i.company_id = $1::uuid AND i.id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($2::jsonb)))
     AND (i.execution_workspace_settings ->> 'pendingExistingWorkspaceId') ~ '^[0-9a-fA-F-]{36}$'
)
SELECT w.id::text AS id FROM execution_workspaces w
 WHERE w.company_id = $1::uuid AND w.strategy_type = 'git_worktree'
   AND (w.source_issue_id IN (SELECT id FROM up) OR w.id IN (SELECT id FROM own WHERE id IS NOT NULL)
        OR w.id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($3::jsonb))))
