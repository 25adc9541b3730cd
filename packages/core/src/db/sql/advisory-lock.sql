-- Takes a transaction-scoped advisory lock, waiting for it.
-- $1 text: lock namespace (e.g. 'reclaim.native-workspace-sync')
-- $2 text: key inside the namespace (a company id, "instance", a run id)
-- The two-int form keeps namespaces apart; hashtext is stable across PostgreSQL versions of
-- the same major line, and both Reclaim and Paperclip compute keys the same way.
SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))::text AS locked
