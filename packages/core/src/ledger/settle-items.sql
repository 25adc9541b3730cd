-- Settles the items a job judged, in one statement (item-deadlines.ts, settleItems): each
-- item's next due time (NULL: wait for an event) and reason are written only where its
-- version is still the one the job read; an item woken meanwhile keeps its wake-up.
-- $1 text: the domain
-- $2 jsonb: [{"itemId", "version" (text), "dueAt" (ISO text or null), "reason"}], one entry per item
-- $3 timestamptz: the clock's now
-- Output: item_id (text), one row per item settled
-- The rows are looked up by their key (`item_id = ANY (ARRAY(...))`, the primary key's range):
-- joined to the batch alone, a plan made on a young table hashed the batch and read the
-- whole ledger of items (the statement is prepared per connection, its plan kept).
UPDATE reclaim_item_deadlines AS d
   SET due_at = s."dueAt", reason = s.reason, version = d.version + 1, updated_at = $3::timestamptz
  FROM jsonb_to_recordset($2::jsonb) AS s("itemId" text, version bigint, "dueAt" timestamptz, reason text)
 WHERE d.domain = $1::text
   AND d.item_id = ANY (ARRAY(SELECT e ->> 'itemId' FROM jsonb_array_elements($2::jsonb) e))
   AND d.item_id = s."itemId" AND d.version = s.version
RETURNING d.item_id
