-- What refers to a batch of task directories by path: the execution workspace rows whose
-- cwd is the directory or below it, and the project workspaces whose cwd is the directory or
-- below it. Paths are compared as stored (the Paperclip server writes absolute paths).
-- $1 jsonb: array of {"key": text, "path": text}
-- $2 text: company id
-- Output, one row per reference:
--   key, kind ('workspace' | 'project_workspace'), id, status (workspaces), source_issue_id,
--   exact (cwd is the directory itself)
WITH dirs AS (
  SELECT d ->> 'key' AS key, d ->> 'path' AS path FROM jsonb_array_elements($1::jsonb) d
)
SELECT d.key, 'workspace' AS kind, w.id::text AS id, w.status, w.source_issue_id::text AS source_issue_id,
       w.cwd = d.path AS exact
  FROM dirs d JOIN execution_workspaces w
    ON w.company_id = $2::uuid AND (w.cwd = d.path OR starts_with(w.cwd, d.path || '/'))
UNION ALL
SELECT d.key, 'project_workspace', p.id::text, NULL, NULL, p.cwd = d.path
  FROM dirs d JOIN project_workspaces p
    ON p.company_id = $2::uuid AND (p.cwd = d.path OR starts_with(p.cwd, d.path || '/'))
