-- Which of these folder names are runs of one company (a company job's own folders).
-- $1 jsonb: array of run ids (text), $2 uuid: the company
-- Output: id text, one row per run of that company
SELECT r.id::text AS id
  FROM heartbeat_runs r
 WHERE r.company_id = $2::uuid
   AND r.id IN (SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb))
