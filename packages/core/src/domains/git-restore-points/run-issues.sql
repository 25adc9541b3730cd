-- The issues a run belongs to: its context_snapshot issueId, and issues whose checkout or
-- execution run it is.
-- $1 text: company id, $2 text: run id
-- Output: id (text), one row per issue
SELECT i.id::text AS id FROM issues i
 WHERE i.company_id = $1::uuid
   AND (i.checkout_run_id = $2::uuid OR i.execution_run_id = $2::uuid
        OR i.id::text = (SELECT h.context_snapshot ->> 'issueId' FROM heartbeat_runs h
                          WHERE h.id = $2::uuid AND h.company_id = $1::uuid))
