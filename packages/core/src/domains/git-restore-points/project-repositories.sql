-- The repository URLs of a project's workspaces (project_workspaces.repo_url): a nested
-- .paperclip-repositories checkout is judged against its remote only when its origin is one
-- of them (an origin an agent rewrote is never read or trusted).
-- $1 text: company id, $2 text: project id
-- Output: repo_url, one row per distinct URL
SELECT DISTINCT p.repo_url FROM project_workspaces p
 WHERE p.company_id = $1::uuid AND p.project_id = $2::uuid AND p.repo_url IS NOT NULL
