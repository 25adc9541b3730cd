-- Deletes up to $3 reports of one domain that finished before $2 (report retention). Each job
-- prunes a few of its own domain when it stores its report, so old rows go without a
-- periodic task; the running totals (reclaim_report_totals) keep counting them.
-- $1 text: domain   $2 timestamptz: cutoff   $3 int: at most this many
-- Output: none
DELETE FROM reclaim_batch_reports
 WHERE id IN (SELECT id FROM reclaim_batch_reports
               WHERE domain = $1 AND finished_at < $2::timestamptz
               ORDER BY finished_at
               LIMIT $3::int)
