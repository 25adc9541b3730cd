-- Execution workspace rows of a company, by id.
-- $1 jsonb: array of workspace ids (text), $2 text: company id
-- Output: id, company_id, source_issue_id, mode, strategy_type, provider_type, status, cwd,
--   closed_at, metadata, updated_at
SELECT w.id::text AS id, w.company_id::text AS company_id, w.source_issue_id::text AS source_issue_id,
       w.mode, w.strategy_type, w.provider_type, w.status, w.cwd, w.closed_at, w.metadata, w.updated_at
  FROM execution_workspaces w
 WHERE w.company_id = $2::uuid
   AND w.id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb)))
