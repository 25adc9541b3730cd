-- Reclaim 0006: an index for the restore points whose stored object is being removed.
--
-- Rows in `expiring` (expiry hook to run), `superseded` and `delete_requested` (object to
-- delete) are due at COALESCE(retry_at, updated_at): the retry time after a failure, else
-- when they entered that status. due-work.sql takes the oldest 50 due ones of a company, and
-- next-due.sql asks whether one is due and when the next one will be. 0002 had no index in
-- that order: with 100,000 delete_requested rows in one company (a big company deleted)
-- every batch sorted all of them and next-due.sql scanned the table (bench/restore-points/
-- deletion-backlog.ts: ~200 ms a batch, 2,000 batches). With this index each of those is
-- a short range at the start of the company's entries.
--
-- Partial: only rows in those three statuses are in it, so the issues trigger's marking of
-- `active` rows never writes to it (that update is not HOT anyway: delete_after is indexed).
-- `deleted` rows leave it, so it stays as small as the work still to do.
--
-- On a database where `execution_workspace_restore_points` came from Paperclip (0002 then
-- left the table as it was), this adds an index to it: an index, not a column, with a
-- Reclaim name, which Reclaim's queries need there as well.
-- Plain CREATE INDEX (not CONCURRENTLY: a migration runs as one transaction): it blocks
-- writes to the table while it builds, well under a second for 100,000 rows.

CREATE INDEX IF NOT EXISTS "execution_workspace_restore_points_company_id_work_due_idx"
  ON "execution_workspace_restore_points" ("company_id", (COALESCE("retry_at", "updated_at")), "id")
  WHERE "status" IN ('expiring', 'superseded', 'delete_requested');
