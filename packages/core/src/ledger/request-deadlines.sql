-- Records deadlines in the ledger. A later deadline never postpones an earlier one (LEAST),
-- and every touch bumps `version`, so a job that is running now does not consume a row
-- that was requested again while it ran (see deadlines.ts, consumeClaimed).
-- $1 jsonb: [{"domain", "scope", "reason", "dueAt"}], one entry per (domain, scope, reason)
-- $2 timestamptz: the clock's now
-- Output: none
INSERT INTO reclaim_deadlines AS d (domain, company_id, reason, due_at, version, created_at, updated_at)
SELECT r.domain, r.scope, r.reason, r."dueAt", 1, $2::timestamptz, $2::timestamptz
  FROM jsonb_to_recordset($1::jsonb) AS r(domain text, scope text, reason text, "dueAt" timestamptz)
ON CONFLICT (domain, company_id, reason) DO UPDATE
   SET due_at = LEAST(d.due_at, EXCLUDED.due_at),
       version = d.version + 1,
       updated_at = EXCLUDED.updated_at
