-- The issues runs belong to: each run's context_snapshot issueId, and issues whose checkout or
-- execution run it is (each run looked at within its own company).
-- $1 jsonb: [{"companyId", "runId"}]
-- Output: company_id (text), id (text), one row per issue and run
SELECT a.company_id::text AS company_id, i.id::text AS id
  FROM (SELECT DISTINCT r."companyId"::uuid AS company_id, r."runId"::uuid AS run_id
          FROM jsonb_to_recordset($1::jsonb) AS r("companyId" text, "runId" text)) AS a
 CROSS JOIN LATERAL (
   SELECT i.id FROM issues i
    WHERE i.company_id = a.company_id
      AND (i.checkout_run_id = a.run_id OR i.execution_run_id = a.run_id
           OR i.id::text = (SELECT h.context_snapshot ->> 'issueId' FROM heartbeat_runs h
                             WHERE h.id = a.run_id AND h.company_id = a.company_id))
   OFFSET 0) AS i
