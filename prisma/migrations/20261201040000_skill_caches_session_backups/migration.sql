-- Reclaim 0002 (issue 4): what skill version cache retention and native session backup
-- expiration read, and the liveness report of the Paperclip server.
--
-- company_skills and company_skill_versions are Paperclip's own tables: on Paperclip's
-- database they exist and are never recreated or altered; on an empty database this creates
-- the mirror subset of prisma/schema.prisma. The pin tables are Paperclip-style tables the
-- spec needs and the public schema lacks, created only where absent. The liveness table is
-- Reclaim's own. The whole script runs as one transaction (prisma/migration-adapter.ts).

-- Paperclip table (mirror subset)
DO $$ BEGIN
IF to_regclass('public.company_skills') IS NULL THEN
  CREATE TABLE "company_skills" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "current_version_id" UUID,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "company_skills_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "company_skills_company_id_idx" ON "company_skills"("company_id");
END IF;
END $$;

-- Paperclip table (mirror subset)
DO $$ BEGIN
IF to_regclass('public.company_skill_versions') IS NULL THEN
  CREATE TABLE "company_skill_versions" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "company_skill_id" UUID NOT NULL,
      "revision_number" INTEGER NOT NULL,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "company_skill_versions_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "company_skill_versions_company_skill_id_idx" ON "company_skill_versions"("company_skill_id");
END IF;
END $$;

-- Paperclip-style table defined by Reclaim
DO $$ BEGIN
IF to_regclass('public.company_skill_run_pins') IS NULL THEN
  CREATE TABLE "company_skill_run_pins" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "heartbeat_run_id" UUID NOT NULL,
      "company_skill_id" UUID NOT NULL,
      "company_skill_version_id" UUID,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "company_skill_run_pins_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "company_skill_run_pins_company_id_idx" ON "company_skill_run_pins"("company_id");

  CREATE INDEX "company_skill_run_pins_heartbeat_run_id_idx" ON "company_skill_run_pins"("heartbeat_run_id");
END IF;
END $$;

-- Paperclip-style table defined by Reclaim
DO $$ BEGIN
IF to_regclass('public.company_skill_recovery_pins') IS NULL THEN
  CREATE TABLE "company_skill_recovery_pins" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "company_skill_id" UUID NOT NULL,
      "company_skill_version_id" UUID,
      "heartbeat_run_id" UUID,
      "issue_id" UUID,
      "status" TEXT NOT NULL DEFAULT 'pending',
      "settled_at" TIMESTAMPTZ(6),
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "company_skill_recovery_pins_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "company_skill_recovery_pins_company_id_idx" ON "company_skill_recovery_pins"("company_id");
END IF;
END $$;

-- Paperclip-style table defined by Reclaim
DO $$ BEGIN
IF to_regclass('public.company_skill_agent_pins') IS NULL THEN
  CREATE TABLE "company_skill_agent_pins" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "agent_id" UUID NOT NULL,
      "company_skill_id" UUID NOT NULL,
      "company_skill_version_id" UUID NOT NULL,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "company_skill_agent_pins_pkey" PRIMARY KEY ("id")
  );

  CREATE INDEX "company_skill_agent_pins_company_id_idx" ON "company_skill_agent_pins"("company_id");
END IF;
END $$;

-- Reclaim's own
CREATE TABLE "reclaim_native_session_liveness" (
    "instance" TEXT NOT NULL DEFAULT 'instance',
    "sessions" JSONB NOT NULL DEFAULT '[]',
    "reported_at" TIMESTAMPTZ(6) NOT NULL,
    "received_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "reclaim_native_session_liveness_pkey" PRIMARY KEY ("instance")
);
