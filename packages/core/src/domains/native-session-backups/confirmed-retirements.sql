-- The confirmed `.retiring-*` copies (reclaim_confirmed_retirements: their expiry committed)
-- of the batch's `failover-backups/` folders that hold leftovers, as listed under the lock,
-- in one statement. The records of those folders that name no `.retiring-*` listed there are
-- deleted: a finish interrupted after its `.expired` rename, before it deleted the records
-- (a crash, a failed statement), left them; that name never comes back (unique), and no
-- other job records one while this job holds the lock. The records of the listed ones are
-- returned.
-- $1 jsonb: array of {"folder": "<scope>/failover-backups/",
--                     "retiring": ["<scope>/failover-backups/.retiring-<UUID>", ...]}
--           (paths relative to the durable-sessions root)
-- Output: path text, one row per listed `.retiring-*` that has a record
-- Reads: each folder's records as one range of the path index in code-point order
-- (reclaim_confirmed_retirements_path_c_idx), from the folder to the folder with its last
-- character's code point plus one: exactly the paths that start with the folder; each listed
-- name by primary key. (A comparison of left(path, n) with the folder read the whole table.)
WITH listed AS (
  SELECT f ->> 'folder' AS folder,
         left(f ->> 'folder', -1) || chr(ascii(right(f ->> 'folder', 1)) + 1) AS folder_end,
         ARRAY(SELECT jsonb_array_elements_text(f -> 'retiring')) AS retiring
    FROM jsonb_array_elements($1::jsonb) f
),
forgotten AS (
  DELETE FROM reclaim_confirmed_retirements r
   USING listed l
   WHERE r.path COLLATE "C" >= l.folder
     AND r.path COLLATE "C" < l.folder_end
     AND strpos(substr(r.path, length(l.folder) + 1), '/') = 0
     AND r.path <> ALL (l.retiring)
  RETURNING r.path
)
SELECT r.path
  FROM listed l
 CROSS JOIN LATERAL unnest(l.retiring) AS x(path)
 CROSS JOIN LATERAL (SELECT path FROM reclaim_confirmed_retirements WHERE path = x.path OFFSET 0) AS r
