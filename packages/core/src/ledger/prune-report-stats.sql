-- Deletes up to $2 hourly rollup rows older than $1 (STATS_RETENTION_DAYS) and up to $2 day
-- rows whose whole day lies before it, each through its table's time index: one descent each
-- when there are none. Each stored report prunes a few, so old rows go without a periodic task.
-- $1 timestamptz: cutoff   $2 int: at most this many of each
-- Output: none
WITH hourly AS (
  DELETE FROM reclaim_report_stats
   WHERE ctid IN (SELECT ctid FROM reclaim_report_stats
                   WHERE hour < $1::timestamptz
                   LIMIT $2::int)
)
DELETE FROM reclaim_report_stats_daily
 WHERE ctid IN (SELECT ctid FROM reclaim_report_stats_daily
                 WHERE day <= $1::timestamptz - interval '1 day'
                 LIMIT $2::int)
