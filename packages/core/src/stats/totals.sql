-- Entries and bytes per domain, outcome and dry run over the last 24, 168 and 720 hour buckets
-- (the current hour included): the console overview's 24 h / 7 d / 30 d figures. One range scan
-- of the (company_id, outcome, hour) index, or of the primary key with a domain.
-- $1 timestamptz: the current hour (UTC, truncated)
-- $2 text: one domain, or NULL for all
-- $3 text: one company (or `instance`), or '*' for the rows summed over every company
-- Output: domain, outcome, dry_run, entries_24h, bytes_24h, entries_7d, bytes_7d, entries_30d, bytes_30d
SELECT domain, outcome, dry_run,
       COALESCE(sum(entries) FILTER (WHERE hour > $1::timestamptz - interval '24 hours'), 0)::bigint AS entries_24h,
       COALESCE(sum(bytes) FILTER (WHERE hour > $1::timestamptz - interval '24 hours'), 0)::bigint AS bytes_24h,
       COALESCE(sum(entries) FILTER (WHERE hour > $1::timestamptz - interval '168 hours'), 0)::bigint AS entries_7d,
       COALESCE(sum(bytes) FILTER (WHERE hour > $1::timestamptz - interval '168 hours'), 0)::bigint AS bytes_7d,
       sum(entries)::bigint AS entries_30d,
       sum(bytes)::bigint AS bytes_30d
  FROM reclaim_report_stats
 WHERE outcome IN ('candidate', 'removed', 'skipped', 'failed')
   AND hour > $1::timestamptz - interval '720 hours'
   AND ($2::text IS NULL OR domain = $2::text)
   AND company_id = $3::text
 GROUP BY domain, outcome, dry_run
