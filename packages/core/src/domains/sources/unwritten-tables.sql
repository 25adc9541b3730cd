-- Which of these tables nothing but Reclaim writes: Reclaim's migrations created them
-- (reclaim_created_tables) on a Paperclip database, that is one whose heartbeat_runs
-- Reclaim did not create. On an empty database (development, tests) every table is
-- Reclaim's mirror, written by whoever uses it, and none is listed.
-- $1 text[]: table names
-- Output: table_name text, one row per such table
SELECT t.table_name
  FROM reclaim_created_tables t
 WHERE t.table_name = ANY($1::text[])
   AND NOT EXISTS (SELECT 1 FROM reclaim_created_tables p WHERE p.table_name = 'heartbeat_runs')
