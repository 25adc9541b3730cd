-- Entries and bytes per domain, outcome and dry run over the last 24, 168 and 720 hour buckets
-- (the current hour included): the console overview's 24 h / 7 d / 30 d figures. A window is
-- whole UTC days read from the day rows, and hourly rows for the hours before its first whole
-- day; the 24 h window reads hourly rows only. Each part one index-only range scan of its
-- table's (company_id, outcome, hour|day) index: at most 24 + 23 + 23 hours and 31 days of
-- rows, whatever the number of reports. (One branch per hour range rather than a join on a
-- list of ranges: the planner cannot misjudge it into a scan of every hourly row.)
-- $1 timestamptz: first hour of the 24 h window
-- $2 timestamptz: first hour of the 7 d window   $3 timestamptz: its first whole day
-- $4 timestamptz: first hour of the 30 d window  $5 timestamptz: its first whole day
-- $6 text: one domain, or NULL for all
-- $7 text: one company (or `instance`), or '*' for the rows summed over every company
-- Output: domain, outcome, dry_run, entries_24h, bytes_24h, entries_7d, bytes_7d, entries_30d, bytes_30d
SELECT domain, outcome, dry_run,
       COALESCE(sum(entries) FILTER (WHERE part = 'h24'), 0)::bigint AS entries_24h,
       COALESCE(sum(bytes) FILTER (WHERE part = 'h24'), 0)::bigint AS bytes_24h,
       COALESCE(sum(entries) FILTER (WHERE part = 'h7' OR (part = 'd' AND at >= $3::timestamptz)), 0)::bigint AS entries_7d,
       COALESCE(sum(bytes) FILTER (WHERE part = 'h7' OR (part = 'd' AND at >= $3::timestamptz)), 0)::bigint AS bytes_7d,
       COALESCE(sum(entries) FILTER (WHERE part IN ('h30', 'd')), 0)::bigint AS entries_30d,
       COALESCE(sum(bytes) FILTER (WHERE part IN ('h30', 'd')), 0)::bigint AS bytes_30d
  FROM (SELECT 'h24' AS part, domain, outcome, dry_run, hour AS at, entries, bytes
          FROM reclaim_report_stats
         WHERE company_id = $7::text AND outcome IN ('candidate', 'removed', 'skipped', 'failed')
           AND hour >= $1::timestamptz
           AND ($6::text IS NULL OR domain = $6::text)
        UNION ALL
        SELECT 'h7', domain, outcome, dry_run, hour, entries, bytes
          FROM reclaim_report_stats
         WHERE company_id = $7::text AND outcome IN ('candidate', 'removed', 'skipped', 'failed')
           AND hour >= $2::timestamptz AND hour < $3::timestamptz
           AND ($6::text IS NULL OR domain = $6::text)
        UNION ALL
        SELECT 'h30', domain, outcome, dry_run, hour, entries, bytes
          FROM reclaim_report_stats
         WHERE company_id = $7::text AND outcome IN ('candidate', 'removed', 'skipped', 'failed')
           AND hour >= $4::timestamptz AND hour < $5::timestamptz
           AND ($6::text IS NULL OR domain = $6::text)
        UNION ALL
        SELECT 'd', domain, outcome, dry_run, day, entries, bytes
          FROM reclaim_report_stats_daily
         WHERE company_id = $7::text AND outcome IN ('candidate', 'removed', 'skipped', 'failed')
           AND day >= $5::timestamptz
           AND ($6::text IS NULL OR domain = $6::text)) AS r
 GROUP BY domain, outcome, dry_run
