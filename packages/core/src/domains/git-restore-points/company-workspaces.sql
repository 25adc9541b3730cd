-- A requested sweep's page of a company's git worktree workspaces: open ones, and closed ones
-- whose removal is still to finish, in id order after the cursor.
-- $1 text: company id, $2 text: the cursor (the last id of the previous page, '' for the first),
-- $3 integer: page size
-- Output: id (text)
SELECT w.id::text AS id
  FROM execution_workspaces w
 WHERE w.company_id = $1::uuid AND w.strategy_type = 'git_worktree' AND w.cwd IS NOT NULL
   AND (w.status IN ('active', 'idle', 'in_review') OR (w.metadata -> 'gitCacheExpirationRemoval') IS NOT NULL)
   AND w.id::text > $2::text
 ORDER BY w.id::text
 LIMIT $3::integer
