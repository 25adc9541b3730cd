-- Wakes items of a domain (reclaim_item_deadlines): an item's due time becomes the earlier of
-- the one it had and the one requested (a NULL due time, "nothing scheduled", loses to any);
-- every touch bumps `version`, so a job judging the item now does not overwrite the wake-up
-- with its verdict (item-deadlines.ts, settleItem). The reason follows the earlier time.
-- $1 jsonb: [{"domain", "scope", "itemId", "reason", "dueAt"}], one entry per (domain, itemId)
-- $2 timestamptz: the clock's now
-- Output: none
INSERT INTO reclaim_item_deadlines AS d (domain, item_id, company_id, reason, due_at, version, updated_at)
SELECT w.domain, w."itemId", w.scope, w.reason, w."dueAt", 1, $2::timestamptz
  FROM jsonb_to_recordset($1::jsonb) AS w(domain text, scope text, "itemId" text, reason text, "dueAt" timestamptz)
ON CONFLICT (domain, item_id) DO UPDATE
   SET due_at = LEAST(COALESCE(d.due_at, EXCLUDED.due_at), EXCLUDED.due_at),
       reason = CASE WHEN d.due_at IS NULL OR EXCLUDED.due_at < d.due_at THEN EXCLUDED.reason ELSE d.reason END,
       company_id = EXCLUDED.company_id,
       version = d.version + 1,
       updated_at = EXCLUDED.updated_at
