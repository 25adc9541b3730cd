-- One company's restore points by status: how many, their bytes, the oldest and newest. One scan
-- of the (company_id, status, delete_after) index's company prefix.
-- $1 uuid: company
-- Output: status, count, bytes, oldest, newest
SELECT status,
       count(*)::bigint AS count,
       COALESCE(sum(byte_size), 0)::bigint AS bytes,
       min(created_at) AS oldest,
       max(created_at) AS newest
  FROM execution_workspace_restore_points
 WHERE company_id = $1::uuid
 GROUP BY status
 ORDER BY status
