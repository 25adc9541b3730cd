-- Reclaim (issue 11): the columns git cache expiration reads of a git worktree workspace
-- (packages/core/src/domains/git-restore-points, docs/paperclip-tables.md), added only where
-- Reclaim created the mirror (reclaim_created_tables); Paperclip's own tables have them:
--   execution_workspaces  repo_url, base_ref, branch_name (execution_workspaces.ts)
--   project_workspaces    project_id, repo_url (project_workspaces.ts): the repositories a
--                         nested .paperclip-repositories checkout may come from
-- The whole script runs as one transaction (prisma/migration-adapter.ts).

DO $$ BEGIN
IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = 'execution_workspaces') THEN
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "repo_url" TEXT;
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "base_ref" TEXT;
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "branch_name" TEXT;
END IF;
IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = 'project_workspaces') THEN
  ALTER TABLE "project_workspaces" ADD COLUMN IF NOT EXISTS "project_id" UUID;
  ALTER TABLE "project_workspaces" ADD COLUMN IF NOT EXISTS "repo_url" TEXT;
END IF;
END $$;
