-- The state of each source issue's tree (the issue and all its descendants), for a batch of
-- reviews in one query. A parent cycle ends the walk (UNION drops ids already found).
-- Works on Paperclip's full `issues` table and on Reclaim's mirror alike.
-- $1 jsonb: array of source issue ids (text)
-- $2 text: company id (issues of other companies are not part of a tree)
-- Output, one row per source issue that still exists:
--   source_issue_id text
--   open            boolean      some issue of the tree is neither done nor cancelled
--   latest_close    timestamptz  latest completed_at / cancelled_at (updated_at when unset)
WITH RECURSIVE roots AS (
  SELECT DISTINCT value::uuid AS root FROM jsonb_array_elements_text($1::jsonb)
),
tree(root, id) AS (
  SELECT r.root, i.id
    FROM roots r JOIN issues i ON i.id = r.root AND i.company_id = $2::uuid
  UNION
  SELECT t.root, c.id
    FROM tree t JOIN issues c ON c.parent_id = t.id AND c.company_id = $2::uuid
)
SELECT t.root::text AS source_issue_id,
       bool_or(i.status NOT IN ('done', 'cancelled')) AS open,
       max(CASE i.status
             WHEN 'done' THEN COALESCE(i.completed_at, i.updated_at)
             WHEN 'cancelled' THEN COALESCE(i.cancelled_at, i.updated_at)
             ELSE i.updated_at
           END) AS latest_close
  FROM tree t JOIN issues i ON i.id = t.id
 GROUP BY t.root
