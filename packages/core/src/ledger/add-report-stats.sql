-- Adds one report's entry tally to the rollup (the report's own transaction): each (company,
-- outcome, reason) to its company's row and to the row of every company ('*'), in the hourly
-- rows and in the day rows alike (one statement, so a report is in both or in neither).
-- $1 text: domain   $2 timestamptz: the report's finished_at (its hour and day are the rows')
-- $3 boolean: dry run
-- $4 text[]: company (the entry's, else the report's scope)   $5 text[]: outcome
-- $6 text[]: reason ('' for none)   $7 bigint[]: entries   $8 bigint[]: bytes
-- The arrays are parallel, one element per (company, outcome, reason), each at most once.
-- Rows are written in key order, so concurrent reports lock shared rows ('*') in one order.
-- Output: none
WITH cells AS (
  SELECT k.company_id, c.outcome, c.reason, sum(c.entries) AS entries, sum(c.bytes) AS bytes
    FROM unnest($4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
         AS c(company_id, outcome, reason, entries, bytes)
   CROSS JOIN LATERAL (VALUES (c.company_id), ('*')) AS k(company_id)
   GROUP BY k.company_id, c.outcome, c.reason
), hourly AS (
  INSERT INTO reclaim_report_stats AS s (domain, company_id, hour, dry_run, outcome, reason, entries, bytes)
  SELECT $1, company_id, date_trunc('hour', $2::timestamptz, 'UTC'), $3::boolean, outcome, reason, entries, bytes
    FROM cells
   ORDER BY company_id, outcome, reason
  ON CONFLICT (domain, company_id, hour, dry_run, outcome, reason) DO UPDATE SET
    entries = s.entries + EXCLUDED.entries,
    bytes = s.bytes + EXCLUDED.bytes
)
INSERT INTO reclaim_report_stats_daily AS s (domain, company_id, day, dry_run, outcome, reason, entries, bytes)
SELECT $1, company_id, date_trunc('day', $2::timestamptz, 'UTC'), $3::boolean, outcome, reason, entries, bytes
  FROM cells
 ORDER BY company_id, outcome, reason
ON CONFLICT (domain, company_id, day, dry_run, outcome, reason) DO UPDATE SET
  entries = s.entries + EXCLUDED.entries,
  bytes = s.bytes + EXCLUDED.bytes
