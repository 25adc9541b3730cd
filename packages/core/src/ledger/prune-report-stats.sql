-- Deletes up to $3 rollup rows older than $1 (STATS_RETENTION_DAYS). Each stored report prunes a
-- few, so old rows go without a periodic task. The outcomes ($2, every one there is) let the
-- (outcome, hour) index find old rows in a few descents when there are none.
-- $1 timestamptz: cutoff   $2 text[]: every entry outcome   $3 int: at most this many
-- Output: none
DELETE FROM reclaim_report_stats
 WHERE ctid IN (SELECT ctid FROM reclaim_report_stats
                 WHERE outcome = ANY($2::text[]) AND hour < $1::timestamptz
                 LIMIT $3::int)
