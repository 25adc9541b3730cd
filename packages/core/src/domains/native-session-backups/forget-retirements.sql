-- Deletes the records of copies that left `.retiring-*` (renamed to `.expired-*`, or gone).
-- $1 jsonb: array of paths (text, relative to the durable-sessions root)
-- Output: none
-- Each path by primary key (`= ANY (ARRAY(...))`: `IN (SELECT ...)` was planned as a hash
-- semi-join reading the whole table).
DELETE FROM reclaim_confirmed_retirements
 WHERE path = ANY (ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))
