-- The issue's source lock (see issue-source-lock.sql), without waiting.
-- $1 text: issue id, $2 text: company id
-- Output: id (null when another transaction holds the row), exists boolean
SELECT (SELECT l.id::text FROM issues l WHERE l.id = $1::uuid AND l.company_id = $2::uuid
          FOR UPDATE SKIP LOCKED) AS id,
       EXISTS (SELECT 1 FROM issues e WHERE e.id = $1::uuid AND e.company_id = $2::uuid) AS exists
