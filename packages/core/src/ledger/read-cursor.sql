-- A walk's continuation cursor (cursors.ts).
-- $1 text: domain   $2 text: scope (company id or 'instance')   $3 text: the walk's name
-- Output: value text; no row when the walk has no cursor (it starts from the beginning)
SELECT value
  FROM reclaim_cursors
 WHERE domain = $1 AND company_id = $2 AND name = $3
