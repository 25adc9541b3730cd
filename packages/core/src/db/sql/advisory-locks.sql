-- Takes transaction-scoped advisory locks on many keys of one namespace, waiting for each.
-- Keys are taken in the order of their lock ids, so two callers that lock overlapping sets
-- never wait for each other in a cycle.
-- $1 text: lock namespace, $2 text[]: keys (see advisory-lock.sql)
-- Output: one row per distinct lock
SELECT pg_advisory_xact_lock(hashtext($1), l.id)::text AS locked
  FROM (SELECT DISTINCT hashtext(k) AS id FROM unnest($2::text[]) AS k ORDER BY 1) AS l
