-- Reclaim 0005: the issues trigger waits for a review holding a restore point, and marks it
-- due again after that review.
--
-- Why: 0002's trigger locked and marked only `active` rows whose delete_after was empty or
-- in the future. A row already due was neither locked nor marked, and with nothing marked no
-- notification was sent. A review (due-work.sql) locks exactly those due rows, then reads
-- the tree (tree-state.sql) and writes its verdict. When the last open issue of the tree
-- closed between that read and that write, the closing transaction skipped the row, the
-- review cleared delete_after ("tree open") and committed, and the closed tree's restore
-- point stayed active with delete_after NULL until some later issue change.
--
-- Now the trigger first locks every `active` row of the walked issues, whatever its
-- delete_after, in id order (as 0002 and due-work.sql do). A review holding one of them makes
-- the issue change wait until the review commits. Then, in a new statement (so with a
-- snapshot that sees the review's verdict), it marks every locked row that is not already due:
-- delete_after empty (the review found the tree open) or in the future (an expiry time)
-- becomes now(). A row still due after the lock keeps its time: it is due either way, and the
-- notification below schedules a review that starts after this transaction commits (a review
-- that was waiting for the lock reads the tree after it, too). The trigger notifies
-- whenever it locked a row, so that review is never left to chance.
--
-- Cost: an issue change of a tree whose rows are already due now locks them (a tuple lock,
-- no index writes) where 0002 skipped them; a change of a tree whose rows are not due costs
-- what it did (bench/restore-points/issue-update-cost.ts measures both).
--
-- Lock cycles: a review batch never waits for a row lock (it skips rows another transaction
-- holds: due-work.sql, SKIP LOCKED), so only the issue change ever waits, and only for a
-- review's short transaction: no cycle with a review can form, however many issues a
-- transaction changes (restore-point-retention.concurrency.test.ts). Two transactions that
-- each change issues of the same two trees in opposite order can deadlock on these locks as
-- they could on 0002's (now also while the rows are already due).
--
-- Only the function body changes (CREATE OR REPLACE): the triggers of 0002 keep calling it.

CREATE OR REPLACE FUNCTION public.reclaim_restore_points_issue_changed()
RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  issue_company uuid;
  starts uuid[];
  walked uuid[];
  locked integer := 0;
  doomed integer := 0;
BEGIN
  IF TG_OP = 'DELETE' THEN
    issue_company := OLD.company_id;
    starts := ARRAY[OLD.id, OLD.parent_id];
  ELSE
    issue_company := NEW.company_id;
    starts := ARRAY[NEW.id, OLD.parent_id, NEW.parent_id];
  END IF;

  -- Most issue changes happen in companies without a live restore point: one index probe.
  IF NOT EXISTS (SELECT 1 FROM public.execution_workspace_restore_points rp
                  WHERE rp.company_id = issue_company AND rp.status IN ('active', 'pending')) THEN
    RETURN NULL;
  END IF;

  IF TG_OP = 'DELETE' THEN
    doomed := public.reclaim_restore_points_request_deletion(OLD.id, NULL);
  END IF;

  -- The starting issues and all their ancestors. UNION (not UNION ALL) drops an id already
  -- found, so a parent cycle ends the walk instead of looping.
  WITH RECURSIVE up(id) AS (
    SELECT s FROM unnest(starts) AS s WHERE s IS NOT NULL
    UNION
    SELECT i.parent_id FROM public.issues i JOIN up ON i.id = up.id WHERE i.parent_id IS NOT NULL
  )
  SELECT array_agg(up.id) INTO walked FROM up;

  -- Every active row of those issues, due or not: waits here for a review that holds one.
  SELECT count(*) INTO locked
    FROM (SELECT rp.id
            FROM public.execution_workspace_restore_points rp
           WHERE rp.source_issue_id = ANY (walked)
             AND rp.status = 'active'
           ORDER BY rp.id
             FOR UPDATE) AS held;

  IF locked > 0 THEN
    -- A new statement, so a new snapshot: it sees what a review we waited for wrote.
    UPDATE public.execution_workspace_restore_points rp
       SET delete_after = now(), updated_at = now()
     WHERE rp.source_issue_id = ANY (walked)
       AND rp.status = 'active'
       AND (rp.delete_after IS NULL OR rp.delete_after > now());
  END IF;

  IF doomed > 0 THEN
    PERFORM pg_notify('reclaim_restore_points',
                      json_build_object('companyId', issue_company, 'reason', 'issue_deleted')::text);
  END IF;
  IF locked > 0 THEN
    PERFORM pg_notify('reclaim_restore_points',
                      json_build_object('companyId', issue_company, 'reason', 'issue_changed')::text);
  END IF;
  RETURN NULL;
END;
$fn$;
