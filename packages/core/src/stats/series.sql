-- Entries and bytes of one outcome per bucket (hour or day, UTC), by domain or by reason: the
-- console's time series (reclaimed bytes per domain: outcome `removed` by domain; skips by
-- reason: outcome `skipped` by reason). Whole days come from the day rows, hours (hour buckets,
-- and the hours of a last day the range ends inside) from the hourly rows, each one range scan
-- of its table's (company_id, outcome, hour|day) index; a day bucket is date_bin from a UTC
-- midnight (cheaper than date_trunc with a time zone per row).
-- $1 text: outcome   $2 text: 'domain' or 'reason' (what a series is)   $3 interval: '1 hour' or '1 day'
-- $4, $5 timestamptz: the whole days to read from the day rows, from (inclusive) to (exclusive)
-- $6, $7 timestamptz: the hours to read from the hourly rows, from (inclusive) to (exclusive)
-- $8 text: one domain, or NULL for all
-- $9 text: one company (or `instance`), or '*' for the rows summed over every company
-- Output: key, bucket, entries, bytes
SELECT CASE WHEN $2::text = 'reason' THEN reason ELSE domain END AS key,
       date_bin($3::interval, at, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
       sum(entries)::bigint AS entries,
       sum(bytes)::bigint AS bytes
  FROM (SELECT domain, reason, day AS at, entries, bytes
          FROM reclaim_report_stats_daily
         WHERE company_id = $9::text AND outcome = $1::text
           AND day >= $4::timestamptz AND day < $5::timestamptz
           AND ($8::text IS NULL OR domain = $8::text)
        UNION ALL
        SELECT domain, reason, hour, entries, bytes
          FROM reclaim_report_stats
         WHERE company_id = $9::text AND outcome = $1::text
           AND hour >= $6::timestamptz AND hour < $7::timestamptz
           AND ($8::text IS NULL OR domain = $8::text)) AS r
 GROUP BY 1, 2
