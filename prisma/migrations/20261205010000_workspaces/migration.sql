-- Reclaim (issue 12): Paperclip's execution-workspace facts (packages/core/src/workspaces),
-- shared by the task-directory and git restore-point domains.
--
-- Paperclip's tables are never created where they exist, and never altered unless Reclaim
-- created them (reclaim_created_tables). Where Reclaim created them it adds the Paperclip
-- columns the workspace facts read and the archive / reopen transitions write, with
-- Paperclip's names and types (packages/db/src/schema/*.ts in paperclipai/paperclip,
-- docs/paperclip-tables.md):
--   execution_workspaces  project_id, project_workspace_id, provider_ref, last_used_at,
--                         opened_at, cleanup_eligible_at, cleanup_reason
--   issues                checkout_run_id, execution_run_id, execution_workspace_preference,
--                         execution_workspace_settings
-- and creates, where absent, mirrors of Paperclip's activity_log, workspace_runtime_services,
-- project_workspaces and execution_workspace_runtime_leases with the columns Reclaim reads
-- or writes, each recorded in reclaim_created_tables.
-- The whole script runs as one transaction (prisma/migration-adapter.ts).

DO $$ BEGIN
IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = 'execution_workspaces') THEN
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "project_id" UUID;
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "project_workspace_id" UUID;
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "provider_ref" TEXT;
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "last_used_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "opened_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "cleanup_eligible_at" TIMESTAMPTZ(6);
  ALTER TABLE "execution_workspaces" ADD COLUMN IF NOT EXISTS "cleanup_reason" TEXT;
END IF;
IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = 'issues') THEN
  ALTER TABLE "issues" ADD COLUMN IF NOT EXISTS "checkout_run_id" UUID;
  ALTER TABLE "issues" ADD COLUMN IF NOT EXISTS "execution_run_id" UUID;
  ALTER TABLE "issues" ADD COLUMN IF NOT EXISTS "execution_workspace_preference" TEXT;
  ALTER TABLE "issues" ADD COLUMN IF NOT EXISTS "execution_workspace_settings" JSONB;
END IF;

-- activity_log.ts
IF to_regclass('public.activity_log') IS NULL THEN
  CREATE TABLE "activity_log" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "actor_type" TEXT NOT NULL DEFAULT 'system',
      "actor_id" TEXT NOT NULL,
      "action" TEXT NOT NULL,
      "entity_type" TEXT NOT NULL,
      "entity_id" TEXT NOT NULL,
      "agent_id" UUID,
      "run_id" UUID,
      "details" JSONB,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      CONSTRAINT "activity_log_pkey" PRIMARY KEY ("id")
  );
  CREATE INDEX "activity_log_entity_type_id_idx" ON "activity_log" ("entity_type", "entity_id");
  INSERT INTO "reclaim_created_tables" ("table_name") VALUES ('activity_log') ON CONFLICT DO NOTHING;
END IF;

-- workspace_runtime_services.ts (live while status is not 'stopped')
IF to_regclass('public.workspace_runtime_services') IS NULL THEN
  CREATE TABLE "workspace_runtime_services" (
      "id" UUID NOT NULL,
      "company_id" UUID NOT NULL,
      "issue_id" UUID,
      "execution_workspace_id" UUID,
      "status" TEXT NOT NULL,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      CONSTRAINT "workspace_runtime_services_pkey" PRIMARY KEY ("id")
  );
  INSERT INTO "reclaim_created_tables" ("table_name") VALUES ('workspace_runtime_services') ON CONFLICT DO NOTHING;
END IF;

-- project_workspaces.ts (a project workspace whose cwd is at or below a directory refers to it)
IF to_regclass('public.project_workspaces') IS NULL THEN
  CREATE TABLE "project_workspaces" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "cwd" TEXT,
      CONSTRAINT "project_workspaces_pkey" PRIMARY KEY ("id")
  );
  INSERT INTO "reclaim_created_tables" ("table_name") VALUES ('project_workspaces') ON CONFLICT DO NOTHING;
END IF;

-- execution_workspace_runtime_leases (live until expires_at)
IF to_regclass('public.execution_workspace_runtime_leases') IS NULL THEN
  CREATE TABLE "execution_workspace_runtime_leases" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "execution_workspace_id" UUID NOT NULL,
      "expires_at" TIMESTAMPTZ(6) NOT NULL,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      CONSTRAINT "execution_workspace_runtime_leases_pkey" PRIMARY KEY ("id")
  );
  INSERT INTO "reclaim_created_tables" ("table_name") VALUES ('execution_workspace_runtime_leases') ON CONFLICT DO NOTHING;
END IF;
END $$;
