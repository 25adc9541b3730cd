-- Adds one report's entry tally to the hourly rollup (the report's own transaction): each
-- (company, outcome, reason) to its company's row and to the row of every company ('*').
-- $1 text: domain   $2 timestamptz: the report's finished_at (its hour is the row's)
-- $3 boolean: dry run
-- $4 text[]: company (the entry's, else the report's scope)   $5 text[]: outcome
-- $6 text[]: reason ('' for none)   $7 bigint[]: entries   $8 bigint[]: bytes
-- The arrays are parallel, one element per (company, outcome, reason), each at most once.
-- Output: none
INSERT INTO reclaim_report_stats AS s (domain, company_id, hour, dry_run, outcome, reason, entries, bytes)
SELECT $1, k.company_id, date_trunc('hour', $2::timestamptz, 'UTC'), $3::boolean, c.outcome, c.reason,
       sum(c.entries), sum(c.bytes)
  FROM unnest($4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
       AS c(company_id, outcome, reason, entries, bytes)
 CROSS JOIN LATERAL (VALUES (c.company_id), ('*')) AS k(company_id)
 GROUP BY k.company_id, c.outcome, c.reason
ON CONFLICT (domain, company_id, hour, dry_run, outcome, reason) DO UPDATE SET
  entries = s.entries + EXCLUDED.entries,
  bytes = s.bytes + EXCLUDED.bytes
