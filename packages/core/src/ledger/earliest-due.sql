-- The earliest deadline of each ledger key of a batch: what the queue must hold for it
-- (queue/ledger-sync.ts). Keys without rows are absent from the output.
-- Each key's rows are read by the primary key, one lookup per key (a lateral subquery): a
-- join could be planned as a scan of the whole ledger, and a plan made while the ledger was
-- small is kept by its connection as the ledger grows.
-- $1 text[]: domains   $2 text[]: scopes (the same length: key i is ($1[i], $2[i]))
-- Output: domain text, scope text, due_at timestamptz
SELECT k.domain, k.scope, e.due_at
  FROM (SELECT DISTINCT domain, scope FROM unnest($1::text[], $2::text[]) AS u(domain, scope)) AS k
 CROSS JOIN LATERAL (SELECT min(d.due_at) AS due_at
                       FROM reclaim_deadlines d
                      WHERE d.domain = k.domain AND d.company_id = k.scope) AS e
 WHERE e.due_at IS NOT NULL
