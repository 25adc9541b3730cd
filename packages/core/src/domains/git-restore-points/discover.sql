-- Start-up discovery: git worktree workspaces git cache expiration does not track yet (no
-- reclaim_item_deadlines row of the domain): open ones, and closed ones whose removal is
-- still to finish (metadata gitCacheExpirationRemoval). Each is judged once, then only at its
-- own deadline or when a change wakes it.
-- $1 text: the domain id
-- Output: id, company_id
SELECT w.id::text AS id, w.company_id::text AS company_id
  FROM execution_workspaces w
 WHERE w.strategy_type = 'git_worktree' AND w.cwd IS NOT NULL
   AND (w.status IN ('active', 'idle', 'in_review') OR (w.metadata -> 'gitCacheExpirationRemoval') IS NOT NULL)
   AND NOT EXISTS (SELECT 1 FROM reclaim_item_deadlines d WHERE d.domain = $1::text AND d.item_id = w.id::text)
