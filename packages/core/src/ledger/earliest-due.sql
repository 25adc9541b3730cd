-- The earliest deadline of each ledger key of a batch: what the queue must hold for it
-- (queue/ledger-sync.ts). Keys without rows are absent from the output.
-- $1 text[]: domains   $2 text[]: scopes (the same length: key i is ($1[i], $2[i]))
-- Output: domain text, scope text, due_at timestamptz
SELECT d.domain, d.company_id AS scope, min(d.due_at) AS due_at
  FROM unnest($1::text[], $2::text[]) AS k(domain, scope)
  JOIN reclaim_deadlines d ON d.domain = k.domain AND d.company_id = k.scope
 GROUP BY d.domain, d.company_id
