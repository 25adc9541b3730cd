-- A company job's own folders: which of these folder names are runs of the company, in name
-- order, at most $3 of them, with what tells whether a folder of the run can be removable at
-- all (the batch surveys only the folders it can examine: check.ts).
-- $1 jsonb: array of run ids (text), the folder names after the batch's cursor; $2 uuid: the
-- company; $3 int: at most this many rows
-- Output: id text, status, finished_at; in id order, which for lower-case uuid text is the
-- folder names' order. The runs are found from the names first (MATERIALIZED), so the order
-- and limit never walk the company's or the table's other runs.
WITH mine AS MATERIALIZED (
  SELECT r.id, r.status, r.finished_at
    FROM heartbeat_runs r
   WHERE r.company_id = $2::uuid
     AND r.id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb)))
)
SELECT id::text AS id, status, finished_at
  FROM mine
 ORDER BY mine.id
 LIMIT $3::int
