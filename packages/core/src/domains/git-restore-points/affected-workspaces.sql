-- The git worktree workspaces changes may concern: those named ($2), each issue's own
-- workspace (execution_workspace_id, or the existing / pending workspace it selects), and the
-- workspaces whose source issue is one of the issues or one of their ancestors (their trees
-- contain it). A parent cycle ends the walk. Every issue and workspace is found by its key, and
-- the workspaces of a source issue by the (company_id, source_issue_id) index: one probe each
-- (LATERAL), however many are asked, and never outside an asked company.
-- $1 jsonb: [{"companyId", "issueId"}]   $2 jsonb: [{"companyId", "workspaceId"}]
-- Output: company_id (text), id (text), one row per workspace
WITH RECURSIVE asked AS (
  SELECT i.company_id, i.id, i.parent_id, i.execution_workspace_id, i.execution_workspace_settings
    FROM (SELECT DISTINCT a."companyId"::uuid AS company_id, a."issueId"::uuid AS issue_id
            FROM jsonb_to_recordset($1::jsonb) AS a("companyId" text, "issueId" text)) AS a
   CROSS JOIN LATERAL (SELECT company_id, id, parent_id, execution_workspace_id, execution_workspace_settings
                         FROM issues WHERE id = a.issue_id AND company_id = a.company_id OFFSET 0) AS i
), up(company_id, id, parent_id) AS (
  SELECT company_id, id, parent_id FROM asked
  UNION
  SELECT p.company_id, p.id, p.parent_id
    FROM up
   CROSS JOIN LATERAL (SELECT company_id, id, parent_id FROM issues
                        WHERE id = up.parent_id AND company_id = up.company_id OFFSET 0) AS p
), own(company_id, id) AS (
  SELECT company_id, execution_workspace_id FROM asked
  UNION
  SELECT company_id, (execution_workspace_settings ->> 'existingWorkspaceId')::uuid FROM asked
   WHERE (execution_workspace_settings ->> 'existingWorkspaceId') ~ '^[0-9a-fA-F-]{36}$'
  UNION
  SELECT company_id, (execution_workspace_settings ->> 'pendingExistingWorkspaceId')::uuid FROM asked
   WHERE (execution_workspace_settings ->> 'pendingExistingWorkspaceId') ~ '^[0-9a-fA-F-]{36}$'
  UNION
  SELECT n."companyId"::uuid, n."workspaceId"::uuid
    FROM jsonb_to_recordset($2::jsonb) AS n("companyId" text, "workspaceId" text)
)
SELECT w.company_id::text AS company_id, w.id::text AS id
  FROM up
 CROSS JOIN LATERAL (SELECT company_id, id FROM execution_workspaces
                      WHERE company_id = up.company_id AND source_issue_id = up.id
                        AND strategy_type = 'git_worktree' OFFSET 0) AS w
UNION
SELECT w.company_id::text, w.id::text
  FROM own
 CROSS JOIN LATERAL (SELECT company_id, id FROM execution_workspaces
                      WHERE id = own.id AND company_id = own.company_id
                        AND strategy_type = 'git_worktree' OFFSET 0) AS w
 WHERE own.id IS NOT NULL
