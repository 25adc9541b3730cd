-- Reclaim 0002: the restore-point ledger and the triggers that keep it current.
--
-- `execution_workspace_restore_points` is a Paperclip-style table the public schema does not
-- have yet: created only where absent. It has no foreign keys on purpose, so a row outlives
-- its workspace, issue and company until its stored object is gone.
--
-- Triggers (created, never altering a Paperclip table's columns):
--  * on `issues`, after a change of `status` or `parent_id`, or a delete: every `active`
--    restore point whose source issue is that issue, its old or new parent, or any of their
--    ancestors gets `delete_after` = the transaction's time (due for review), in the same
--    transaction. A delete also moves the deleted issue's own `pending` and `active` rows to
--    `delete_requested`.
--  * on `companies`, after a delete: the company's `pending` and `active` rows go to
--    `delete_requested`.
-- Each trigger that changed a row sends `pg_notify('reclaim_restore_points', '{"companyId",
-- "reason"}')`, delivered only when the transaction commits; the scheduler LISTENs and wakes
-- the retention worker (packages/core/src/domains/restore-point-retention/wake-listener.ts).
-- The ledger itself stays the durable record: the scheduler also finds due rows at start-up.
--
-- Time: a trigger cannot take Reclaim's job clock, so it uses now(), the time its
-- transaction started. Reclaim's own SQL takes `now` as a parameter instead.
--
-- A `pending` row marked for deletion gets `retry_at` = created_at + 1 hour: its capture may
-- still be writing the object, and the one-hour grace is when a capture counts as abandoned.
--
-- Locks: the triggers lock the rows they change in id order, as the retention worker does
-- (due-work.sql), so an issue update and a review never deadlock. Names are schema-qualified
-- because a trigger runs with the search_path of whoever updates `issues`.
-- The whole script runs as one transaction (prisma/migration-adapter.ts), so the `$$` bodies
-- below are applied atomically with the table.

DO $$ BEGIN
IF to_regclass('public.execution_workspace_restore_points') IS NULL THEN
  CREATE TABLE "execution_workspace_restore_points" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "execution_workspace_id" UUID NOT NULL,
      "source_issue_id" UUID NOT NULL,
      "generation" INTEGER NOT NULL,
      "kind" TEXT NOT NULL,
      "checkout_name" TEXT,
      "storage_provider" TEXT NOT NULL,
      "storage_key" TEXT NOT NULL,
      "sha256" TEXT,
      "byte_size" BIGINT,
      "format_version" INTEGER,
      "key_fingerprint" TEXT,
      "status" TEXT NOT NULL DEFAULT 'pending',
      "delete_after" TIMESTAMPTZ(6),
      "last_error" TEXT,
      "retry_at" TIMESTAMPTZ(6),
      "activated_at" TIMESTAMPTZ(6),
      "deleted_at" TIMESTAMPTZ(6),
      "metadata" JSONB,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "execution_workspace_restore_points_pkey" PRIMARY KEY ("id"),
      CONSTRAINT "execution_workspace_restore_points_kind_check"
        CHECK ("kind" IN ('worktree', 'nested_checkout', 'task_directory')),
      CONSTRAINT "execution_workspace_restore_points_status_check"
        CHECK ("status" IN ('pending', 'active', 'expiring', 'superseded', 'delete_requested', 'deleted'))
  );

  CREATE UNIQUE INDEX "execution_workspace_restore_points_storage_key_key" ON "execution_workspace_restore_points"("storage_key");
  CREATE INDEX "execution_workspace_restore_points_source_issue_id_status_idx" ON "execution_workspace_restore_points"("source_issue_id", "status");
  CREATE INDEX "execution_workspace_restore_points_company_id_execution_wor_idx" ON "execution_workspace_restore_points"("company_id", "execution_workspace_id", "created_at" DESC);
  CREATE INDEX "execution_workspace_restore_points_company_id_status_delete_idx" ON "execution_workspace_restore_points"("company_id", "status", "delete_after");
END IF;
END $$;

-- Marks the restore points of a deleted issue or company for deletion (pending rows only
-- after their capture grace). Returns how many rows it changed.
CREATE OR REPLACE FUNCTION public.reclaim_restore_points_request_deletion(by_issue uuid, by_company uuid)
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  changed integer;
BEGIN
  WITH doomed AS (
    SELECT rp.id
      FROM public.execution_workspace_restore_points rp
     WHERE rp.status IN ('pending', 'active')
       AND ((by_issue IS NOT NULL AND rp.source_issue_id = by_issue)
            OR (by_company IS NOT NULL AND rp.company_id = by_company))
     ORDER BY rp.id
       FOR UPDATE
  )
  UPDATE public.execution_workspace_restore_points rp
     SET status = 'delete_requested',
         delete_after = NULL,
         retry_at = CASE WHEN rp.status = 'pending'
                         THEN GREATEST(now(), rp.created_at + interval '1 hour') END,
         updated_at = now()
    FROM doomed
   WHERE rp.id = doomed.id;
  GET DIAGNOSTICS changed = ROW_COUNT;
  RETURN changed;
END;
$fn$;

CREATE OR REPLACE FUNCTION public.reclaim_restore_points_issue_changed()
RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  issue_company uuid;
  starts uuid[];
  reviewed integer := 0;
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
  ),
  due AS (
    SELECT rp.id
      FROM public.execution_workspace_restore_points rp
     WHERE rp.source_issue_id IN (SELECT id FROM up)
       AND rp.status = 'active'
       AND (rp.delete_after IS NULL OR rp.delete_after > now())
     ORDER BY rp.id
       FOR UPDATE
  )
  UPDATE public.execution_workspace_restore_points rp
     SET delete_after = now(), updated_at = now()
    FROM due
   WHERE rp.id = due.id;
  GET DIAGNOSTICS reviewed = ROW_COUNT;

  IF doomed > 0 THEN
    PERFORM pg_notify('reclaim_restore_points',
                      json_build_object('companyId', issue_company, 'reason', 'issue_deleted')::text);
  END IF;
  IF reviewed > 0 THEN
    PERFORM pg_notify('reclaim_restore_points',
                      json_build_object('companyId', issue_company, 'reason', 'issue_changed')::text);
  END IF;
  RETURN NULL;
END;
$fn$;

CREATE OR REPLACE FUNCTION public.reclaim_restore_points_company_deleted()
RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF public.reclaim_restore_points_request_deletion(NULL, OLD.id) > 0 THEN
    PERFORM pg_notify('reclaim_restore_points',
                      json_build_object('companyId', OLD.id, 'reason', 'company_deleted')::text);
  END IF;
  RETURN NULL;
END;
$fn$;

DROP TRIGGER IF EXISTS reclaim_restore_points_issue_update ON public.issues;
-- WHEN keeps every other issue update (titles, assignees, ...) from calling the function.
CREATE TRIGGER reclaim_restore_points_issue_update
  AFTER UPDATE OF status, parent_id ON public.issues
  FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.parent_id IS DISTINCT FROM NEW.parent_id)
  EXECUTE FUNCTION public.reclaim_restore_points_issue_changed();

DROP TRIGGER IF EXISTS reclaim_restore_points_issue_delete ON public.issues;
CREATE TRIGGER reclaim_restore_points_issue_delete
  AFTER DELETE ON public.issues
  FOR EACH ROW
  EXECUTE FUNCTION public.reclaim_restore_points_issue_changed();

DROP TRIGGER IF EXISTS reclaim_restore_points_company_delete ON public.companies;
CREATE TRIGGER reclaim_restore_points_company_delete
  AFTER DELETE ON public.companies
  FOR EACH ROW
  EXECUTE FUNCTION public.reclaim_restore_points_company_deleted();
