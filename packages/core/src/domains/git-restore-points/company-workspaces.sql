-- A requested sweep's page of a company's git worktree workspaces: open ones, and closed ones
-- whose removal is still to finish, in id order after the cursor.
-- $1 text: company id, $2 text: the cursor (the last id of the previous page; NULL for the
-- first), $3 integer: page size
-- Output: id (text)
-- Paged by the uuid itself, not its text: the primary key serves the order, so a page reads
-- about its own rows after the cursor. Ordered by `id::text`, every page read and sorted all of
-- the company's workspaces (no Paperclip index has company and id), and a sweep grew with the
-- square of them. The statement is sent unnamed (queries.ts), so it is planned with its values:
-- the first page's NULL cursor folds away.
SELECT w.id::text AS id
  FROM execution_workspaces w
 WHERE w.company_id = $1::uuid AND w.strategy_type = 'git_worktree' AND w.cwd IS NOT NULL
   AND (w.status IN ('active', 'idle', 'in_review') OR (w.metadata -> 'gitCacheExpirationRemoval') IS NOT NULL)
   AND ($2::uuid IS NULL OR w.id > $2::uuid)
 ORDER BY w.id
 LIMIT $3::integer
