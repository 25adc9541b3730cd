-- Issues and their ancestors (parent_id walk; a cycle ends it), and the execution workspaces
-- whose source issue is one of the issues: what a change of the issues or of their workspaces
-- points the reaper to. Each issue is found by its key, each issue's workspaces by the
-- (company_id, source_issue_id) index: one probe per issue (LATERAL), however many are asked.
-- $1 jsonb: [{"companyId", "issueId"}]
-- Output: company_id, kind ('issue' | 'workspace'), id
WITH RECURSIVE asked AS (
  SELECT DISTINCT a."companyId"::uuid AS company_id, a."issueId"::uuid AS issue_id
    FROM jsonb_to_recordset($1::jsonb) AS a("companyId" text, "issueId" text)
), up(company_id, id, parent_id) AS (
  SELECT i.company_id, i.id, i.parent_id
    FROM asked a
   CROSS JOIN LATERAL (SELECT company_id, id, parent_id FROM issues
                        WHERE id = a.issue_id AND company_id = a.company_id OFFSET 0) AS i
  UNION
  SELECT p.company_id, p.id, p.parent_id
    FROM up
   CROSS JOIN LATERAL (SELECT company_id, id, parent_id FROM issues
                        WHERE id = up.parent_id AND company_id = up.company_id OFFSET 0) AS p
)
SELECT company_id::text AS company_id, 'issue' AS kind, id::text AS id FROM up
UNION ALL
SELECT a.company_id::text, 'workspace', w.id::text
  FROM asked a
 CROSS JOIN LATERAL (SELECT id FROM execution_workspaces
                      WHERE company_id = a.company_id AND source_issue_id = a.issue_id OFFSET 0) AS w
