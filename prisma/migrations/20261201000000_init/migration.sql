-- Reclaim 0001: the tables retention checks read, and Reclaim's own.
--
-- Paperclip's tables (companies, issues, heartbeat_runs, ...) and the Paperclip-style tables
-- Reclaim defines (native_run_finalizations, ...) are created only where absent: on
-- Paperclip's own database they exist already and are never recreated or altered; on an
-- empty database (development, tests, demo) this creates the mirror described in
-- prisma/schema.prisma. reclaim_* tables are Reclaim's own.
-- The whole script runs as one transaction (prisma/migration-adapter.ts).

-- Paperclip table (mirror subset)
DO $$ BEGIN
IF to_regclass('public.companies') IS NULL THEN
  CREATE TABLE "companies" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "name" TEXT NOT NULL,
      "status" TEXT NOT NULL DEFAULT 'active',
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "companies_pkey" PRIMARY KEY ("id")
  );
END IF;
END $$;

-- Paperclip table (mirror subset)
DO $$ BEGIN
IF to_regclass('public.issues') IS NULL THEN
  CREATE TABLE "issues" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "parent_id" UUID,
      "title" TEXT NOT NULL DEFAULT '',
      "status" TEXT NOT NULL DEFAULT 'backlog',
      "completed_at" TIMESTAMPTZ(6),
      "cancelled_at" TIMESTAMPTZ(6),
      "execution_workspace_id" UUID,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "issues_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "issues_parent_id_idx" ON "issues"("parent_id");
END IF;
END $$;

-- Paperclip table (mirror subset)
DO $$ BEGIN
IF to_regclass('public.heartbeat_runs') IS NULL THEN
  CREATE TABLE "heartbeat_runs" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "status" TEXT NOT NULL DEFAULT 'queued',
      "started_at" TIMESTAMPTZ(6),
      "finished_at" TIMESTAMPTZ(6),
      "context_snapshot" JSONB,
      "process_pid" INTEGER,
      "process_started_at" TIMESTAMPTZ(6),
      "process_group_id" INTEGER,
      "session_id_before" TEXT,
      "session_id_after" TEXT,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "heartbeat_runs_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "heartbeat_runs_company_id_status_idx" ON "heartbeat_runs"("company_id", "status");
END IF;
END $$;

-- Paperclip table (mirror subset)
DO $$ BEGIN
IF to_regclass('public.execution_workspaces') IS NULL THEN
  CREATE TABLE "execution_workspaces" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "source_issue_id" UUID,
      "mode" TEXT NOT NULL DEFAULT 'isolated_workspace',
      "strategy_type" TEXT NOT NULL DEFAULT 'git_worktree',
      "name" TEXT NOT NULL DEFAULT '',
      "status" TEXT NOT NULL DEFAULT 'active',
      "cwd" TEXT,
      "provider_type" TEXT NOT NULL DEFAULT 'local_fs',
      "closed_at" TIMESTAMPTZ(6),
      "metadata" JSONB,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "execution_workspaces_pkey" PRIMARY KEY ("id")
  );
END IF;
END $$;

-- Paperclip table (mirror subset)
DO $$ BEGIN
IF to_regclass('public.environment_leases') IS NULL THEN
  CREATE TABLE "environment_leases" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "execution_workspace_id" UUID,
      "issue_id" UUID,
      "heartbeat_run_id" UUID,
      "status" TEXT NOT NULL DEFAULT 'active',
      "lease_policy" TEXT NOT NULL DEFAULT 'ephemeral',
      "provider" TEXT,
      "expires_at" TIMESTAMPTZ(6),
      "released_at" TIMESTAMPTZ(6),
      "cleanup_status" TEXT,
      "metadata" JSONB,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "environment_leases_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "environment_leases_heartbeat_run_id_idx" ON "environment_leases"("heartbeat_run_id");
END IF;
END $$;

-- Paperclip table (mirror subset)
DO $$ BEGIN
IF to_regclass('public.issue_recovery_actions') IS NULL THEN
  CREATE TABLE "issue_recovery_actions" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "source_issue_id" UUID NOT NULL,
      "kind" TEXT NOT NULL DEFAULT '',
      "status" TEXT NOT NULL DEFAULT 'active',
      "evidence" JSONB NOT NULL DEFAULT '{}',
      "resolved_at" TIMESTAMPTZ(6),
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "issue_recovery_actions_pkey" PRIMARY KEY ("id")
  );
END IF;
END $$;

-- Paperclip table (mirror subset)
DO $$ BEGIN
IF to_regclass('public.agent_task_sessions') IS NULL THEN
  CREATE TABLE "agent_task_sessions" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "task_key" TEXT NOT NULL DEFAULT '',
      "session_params_json" JSONB,
      "session_display_id" TEXT,
      "last_run_id" UUID,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "agent_task_sessions_pkey" PRIMARY KEY ("id")
  );
END IF;
END $$;

-- Paperclip-style table defined by Reclaim
DO $$ BEGIN
IF to_regclass('public.native_run_finalizations') IS NULL THEN
  CREATE TABLE "native_run_finalizations" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "heartbeat_run_id" UUID NOT NULL,
      "status" TEXT NOT NULL DEFAULT 'pending',
      "lease_owner" TEXT,
      "lease_expires_at" TIMESTAMPTZ(6),
      "scheduled_retry_at" TIMESTAMPTZ(6),
      "recovery_state" JSONB,
      "owner_receipt" JSONB,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "native_run_finalizations_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "native_run_finalizations_heartbeat_run_id_idx" ON "native_run_finalizations"("heartbeat_run_id");
END IF;
END $$;

-- Paperclip-style table defined by Reclaim
DO $$ BEGIN
IF to_regclass('public.native_workspace_exports') IS NULL THEN
  CREATE TABLE "native_workspace_exports" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "heartbeat_run_id" UUID NOT NULL,
      "status" TEXT NOT NULL DEFAULT 'active',
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "native_workspace_exports_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "native_workspace_exports_heartbeat_run_id_idx" ON "native_workspace_exports"("heartbeat_run_id");
END IF;
END $$;

-- Paperclip-style table defined by Reclaim
DO $$ BEGIN
IF to_regclass('public.native_run_recovery_actions') IS NULL THEN
  CREATE TABLE "native_run_recovery_actions" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "heartbeat_run_id" UUID NOT NULL,
      "kind" TEXT NOT NULL DEFAULT '',
      "status" TEXT NOT NULL DEFAULT 'active',
      "owner_verified_at" TIMESTAMPTZ(6),
      "resolved_at" TIMESTAMPTZ(6),
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "native_run_recovery_actions_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "native_run_recovery_actions_heartbeat_run_id_idx" ON "native_run_recovery_actions"("heartbeat_run_id");
END IF;
END $$;

-- Paperclip-style table defined by Reclaim
DO $$ BEGIN
IF to_regclass('public.retained_workspace_recoveries') IS NULL THEN
  CREATE TABLE "retained_workspace_recoveries" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "heartbeat_run_id" UUID NOT NULL,
      "environment_lease_id" UUID,
      "status" TEXT NOT NULL DEFAULT 'scheduled',
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "retained_workspace_recoveries_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "retained_workspace_recoveries_heartbeat_run_id_idx" ON "retained_workspace_recoveries"("heartbeat_run_id");
END IF;
END $$;

-- Paperclip-style table defined by Reclaim
DO $$ BEGIN
IF to_regclass('public.historical_recovery_adoptions') IS NULL THEN
  CREATE TABLE "historical_recovery_adoptions" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "heartbeat_run_id" UUID NOT NULL,
      "status" TEXT NOT NULL DEFAULT 'pending',
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "historical_recovery_adoptions_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "historical_recovery_adoptions_heartbeat_run_id_idx" ON "historical_recovery_adoptions"("heartbeat_run_id");
END IF;
END $$;

CREATE TABLE "reclaim_deadlines" (
    "domain" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "due_at" TIMESTAMPTZ(6) NOT NULL,
    "version" BIGINT NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reclaim_deadlines_pkey" PRIMARY KEY ("domain","company_id","reason")
);

CREATE INDEX "reclaim_deadlines_domain_due_at_idx" ON "reclaim_deadlines"("domain", "due_at");

CREATE TABLE "reclaim_batch_reports" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "job_id" TEXT NOT NULL,
    "domain" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "dry_run" BOOLEAN NOT NULL,
    "checked" INTEGER NOT NULL DEFAULT 0,
    "candidates" INTEGER NOT NULL DEFAULT 0,
    "removed" INTEGER NOT NULL DEFAULT 0,
    "candidate_bytes" BIGINT NOT NULL DEFAULT 0,
    "reclaimed_bytes" BIGINT NOT NULL DEFAULT 0,
    "skipped" JSONB NOT NULL DEFAULT '{}',
    "entries" JSONB NOT NULL DEFAULT '[]',
    "error" TEXT,
    "cancelled" BOOLEAN NOT NULL DEFAULT false,
    "next_cursor" TEXT,
    "started_at" TIMESTAMPTZ(6) NOT NULL,
    "finished_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "reclaim_batch_reports_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "reclaim_batch_reports_domain_company_id_finished_at_idx" ON "reclaim_batch_reports"("domain", "company_id", "finished_at" DESC);

CREATE INDEX "reclaim_batch_reports_domain_finished_at_idx" ON "reclaim_batch_reports"("domain", "finished_at" DESC);

CREATE INDEX "reclaim_batch_reports_job_id_idx" ON "reclaim_batch_reports"("job_id");

CREATE TABLE "reclaim_cursors" (
    "domain" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reclaim_cursors_pkey" PRIMARY KEY ("domain","company_id","name")
);
