-- An issue and its ancestors (parent_id walk; a cycle ends it), and the execution workspaces
-- whose source issue is that issue: what a change of the issue or of its workspace points the
-- reaper to.
-- $1 text: issue id, $2 text: company id
-- Output: kind ('issue' | 'workspace'), id
WITH RECURSIVE up(id, parent_id) AS (
  SELECT i.id, i.parent_id FROM issues i WHERE i.id = $1::uuid AND i.company_id = $2::uuid
  UNION
  SELECT p.id, p.parent_id FROM up JOIN issues p ON p.id = up.parent_id AND p.company_id = $2::uuid
)
SELECT 'issue' AS kind, id::text AS id FROM up
UNION ALL
SELECT 'workspace', w.id::text FROM execution_workspaces w
 WHERE w.company_id = $2::uuid AND w.source_issue_id = $1::uuid
