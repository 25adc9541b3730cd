-- The state of each source issue's tree (the issue and all its descendants), for a batch of
-- reviews in one query. A parent cycle ends the walk (UNION drops rows already found).
-- Works on Paperclip's full `issues` table and on Reclaim's mirror alike.
-- Plan: the walk is index probes on issues(parent_id) from each issue found (the LATERAL
-- with OFFSET 0 is not flattened into a join); the planner cannot estimate a recursive
-- CTE and otherwise hashes the whole issues table on every batch.
-- $1 jsonb: array of source issue ids (text)
-- $2 text: company id (issues of other companies are not part of a tree)
-- Output, one row per source issue that still exists:
--   source_issue_id text
--   open            boolean      some issue of the tree is neither done nor cancelled
--   latest_close    timestamptz  latest completed_at / cancelled_at (updated_at when unset)
WITH RECURSIVE roots AS (
  SELECT DISTINCT value::uuid AS root FROM jsonb_array_elements_text($1::jsonb)
),
tree(root, id, open, closed_at) AS (
  SELECT r.root, i.id,
         i.status NOT IN ('done', 'cancelled'),
         CASE i.status
           WHEN 'done' THEN COALESCE(i.completed_at, i.updated_at)
           WHEN 'cancelled' THEN COALESCE(i.cancelled_at, i.updated_at)
           ELSE i.updated_at
         END
    FROM roots r JOIN issues i ON i.id = r.root AND i.company_id = $2::uuid
  UNION
  SELECT t.root, c.id, c.open, c.closed_at
    FROM tree t
   CROSS JOIN LATERAL (
     SELECT k.id,
            k.status NOT IN ('done', 'cancelled') AS open,
            CASE k.status
              WHEN 'done' THEN COALESCE(k.completed_at, k.updated_at)
              WHEN 'cancelled' THEN COALESCE(k.cancelled_at, k.updated_at)
              ELSE k.updated_at
            END AS closed_at
       FROM issues k
      WHERE k.parent_id = t.id AND k.company_id = $2::uuid
     OFFSET 0
   ) c
)
SELECT t.root::text AS source_issue_id,
       bool_or(t.open) AS open,
       max(t.closed_at) AS latest_close
  FROM tree t
 GROUP BY t.root
