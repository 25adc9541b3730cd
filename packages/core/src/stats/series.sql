-- Entries and bytes of one outcome per bucket (hour or day, UTC: date_bin from a UTC midnight,
-- cheaper than date_trunc with a time zone per row), by domain or by reason: the
-- console's time series (reclaimed bytes per domain: outcome `removed` by domain; skips by
-- reason: outcome `skipped` by reason). One index range scan, as totals.sql.
-- $1 text: outcome   $2 text: 'domain' or 'reason' (what a series is)   $3 interval: '1 hour' or '1 day'
-- $4 timestamptz: from (inclusive)   $5 timestamptz: to (exclusive)
-- $6 text: one domain, or NULL for all
-- $7 text: one company (or `instance`), or '*' for the rows summed over every company
-- Output: key, bucket, entries, bytes
SELECT CASE WHEN $2::text = 'reason' THEN reason ELSE domain END AS key,
       date_bin($3::interval, hour, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
       sum(entries)::bigint AS entries,
       sum(bytes)::bigint AS bytes
  FROM reclaim_report_stats
 WHERE outcome = $1::text
   AND hour >= $4::timestamptz AND hour < $5::timestamptz
   AND ($6::text IS NULL OR domain = $6::text)
   AND company_id = $7::text
 GROUP BY 1, 2
