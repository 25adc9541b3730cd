-- Deletes the records of copies that left `.retiring-*` (renamed to `.expired-*`, or gone).
-- $1 jsonb: array of paths (text, relative to the durable-sessions root)
-- Output: none
DELETE FROM reclaim_confirmed_retirements
 WHERE path IN (SELECT jsonb_array_elements_text($1::jsonb))
