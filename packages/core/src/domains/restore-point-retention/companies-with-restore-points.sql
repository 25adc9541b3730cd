-- The companies among the given ones that have a restore point in one of the given statuses:
-- one probe of the (company_id, status) index per company, whatever the number of its rows.
-- $1 jsonb: array of company ids (text)   $2 jsonb: array of statuses (text)
-- Output: company_id text
SELECT c.id::text AS company_id
  FROM (SELECT DISTINCT value::uuid AS id FROM jsonb_array_elements_text($1::jsonb)) AS c
 WHERE EXISTS (SELECT 1 FROM execution_workspace_restore_points rp
                WHERE rp.company_id = c.id
                  AND rp.status = ANY (ARRAY(SELECT jsonb_array_elements_text($2::jsonb))))
