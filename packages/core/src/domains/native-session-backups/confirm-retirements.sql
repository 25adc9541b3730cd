-- Records copies renamed to `.retiring-<UUID>` whose expiry commits with the job's transaction
-- (queries.ts `confirmRetirements`); a path already recorded keeps its record.
-- $1 jsonb: array of {"path" (relative to the durable-sessions root), "companyId" (or null)}
-- Output: none
INSERT INTO reclaim_confirmed_retirements (path, company_id)
SELECT r.path, r."companyId"
  FROM jsonb_to_recordset($1::jsonb) AS r(path text, "companyId" text)
ON CONFLICT (path) DO NOTHING
