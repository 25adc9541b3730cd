-- Sets a walk's continuation cursor, or clears it when $4 is null (cursors.ts).
-- $1 text: domain   $2 text: scope (company id or 'instance')   $3 text: the walk's name
-- $4 text: the cursor, null to clear it   $5 timestamptz: now
-- Output: none
WITH cleared AS (
  DELETE FROM reclaim_cursors
   WHERE $4::text IS NULL AND domain = $1 AND company_id = $2 AND name = $3
)
INSERT INTO reclaim_cursors AS c (domain, company_id, name, value, updated_at)
SELECT $1, $2, $3, $4::text, $5::timestamptz
 WHERE $4::text IS NOT NULL
ON CONFLICT (domain, company_id, name) DO UPDATE
   SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at
