-- Deletes up to $2 rollup rows older than $1 (STATS_RETENTION_DAYS), through the hour index: one
-- descent when there are none. Each stored report prunes a few, so old rows go without a
-- periodic task.
-- $1 timestamptz: cutoff   $2 int: at most this many
-- Output: none
DELETE FROM reclaim_report_stats
 WHERE ctid IN (SELECT ctid FROM reclaim_report_stats
                 WHERE hour < $1::timestamptz
                 LIMIT $2::int)
