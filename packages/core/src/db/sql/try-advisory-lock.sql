-- Tries a transaction-scoped advisory lock without waiting.
-- $1 text: lock namespace, $2 text: key (see advisory-lock.sql)
-- Output: acquired boolean
SELECT pg_try_advisory_xact_lock(hashtext($1), hashtext($2)) AS acquired
