-- Tries a transaction-scoped advisory lock on each key of a batch, in one round trip.
-- $1 text: lock namespace, $2 jsonb: array of keys (text)
-- Output: key text, acquired boolean (one row per key, in input order)
SELECT k.value AS key, pg_try_advisory_xact_lock(hashtext($1), hashtext(k.value)) AS acquired
  FROM jsonb_array_elements_text($2::jsonb) WITH ORDINALITY AS k(value, n)
 ORDER BY k.n
