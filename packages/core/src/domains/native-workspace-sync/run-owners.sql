-- Which of these folder names are runs, and of which company (deadline discovery, and the
-- split between company jobs and the instance job's orphans).
-- $1 jsonb: array of run ids (text)
-- Output: id text, company_id text, one row per existing run
SELECT r.id::text AS id, r.company_id::text AS company_id
  FROM heartbeat_runs r
 WHERE r.id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb)))
