-- Reclaim (issue 13b): Paperclip's real table shapes, and a record of which tables Reclaim
-- created itself (docs/paperclip-tables.md).
--
-- 1. reclaim_created_tables lists every table of the mirror that Reclaim's migrations
--    created because the database did not have it. On a Paperclip database nothing but
--    Reclaim writes such a table, so a rule fed by it cannot see what it needs and keeps
--    the entry (`source_unavailable`, packages/core/src/domains/sources/index.ts). Filled here for
--    installations migrated before this table existed: a Paperclip table counts as
--    Reclaim's when it lacks a column Paperclip's own table has always had (the mirror
--    never carried it); a table Paperclip has nowhere counts as Reclaim's whenever it exists.
--    Every later migration that creates a mirror table records it here.
-- 2. native_run_finalizations gets Paperclip's shape (packages/db/src/schema/
--    native_run_finalizations.ts): run_id primary key, phase, attempt, lease_owner, ...
--    Reclaim's earlier invention (id, heartbeat_run_id, status, ...) is dropped where
--    Reclaim created it; Paperclip's own table is never touched.
-- 3. native_workspace_exports and native_run_recovery_actions were Reclaim inventions:
--    Paperclip records workspace exports and recovery actions as issue_recovery_actions rows
--    naming the run in evidence.runId. Dropped where Reclaim created them.
-- 4. Mirrors Reclaim created (never Paperclip's tables) gain the Paperclip columns the
--    checks now read: heartbeat_runs.runner_profile_json (the native workspace sync
--    reference), issue_recovery_actions.owner_type and cause.
-- 5. reclaim_confirmed_retirements (Reclaim's own) is created.
-- The whole script runs as one transaction (prisma/migration-adapter.ts).

CREATE TABLE IF NOT EXISTS "reclaim_created_tables" (
    "table_name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reclaim_created_tables_pkey" PRIMARY KEY ("table_name")
);

DO $$
DECLARE t record;
BEGIN
  FOR t IN SELECT * FROM (VALUES
      -- Paperclip's tables, each with a column the mirror never had.
      ('companies', 'issue_prefix'),
      ('issues', 'priority'),
      ('heartbeat_runs', 'agent_id'),
      ('execution_workspaces', 'project_id'),
      ('environment_leases', 'acquired_at'),
      ('issue_recovery_actions', 'fingerprint'),
      ('agent_task_sessions', 'agent_id'),
      ('company_skills', 'markdown'),
      ('company_skill_versions', 'file_inventory'),
      ('native_run_finalizations', 'run_id'),
      -- Tables Paperclip has nowhere: Reclaim's whenever they exist.
      ('native_workspace_exports', NULL),
      ('native_run_recovery_actions', NULL),
      ('retained_workspace_recoveries', NULL),
      ('historical_recovery_adoptions', NULL),
      ('company_skill_run_pins', NULL),
      ('company_skill_recovery_pins', NULL),
      ('company_skill_agent_pins', NULL)
    ) AS v(tbl, signature)
  LOOP
    IF to_regclass('public.' || t.tbl) IS NOT NULL AND (t.signature IS NULL OR NOT EXISTS (
         SELECT 1 FROM information_schema.columns
          WHERE table_schema = 'public' AND table_name = t.tbl AND column_name = t.signature)) THEN
      INSERT INTO "reclaim_created_tables" ("table_name") VALUES (t.tbl) ON CONFLICT DO NOTHING;
    END IF;
  END LOOP;
END $$;

-- 2. native_run_finalizations as Paperclip defines it (mirror: no foreign keys).
DO $$ BEGIN
IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = 'native_run_finalizations') THEN
  DROP TABLE IF EXISTS "native_run_finalizations";
END IF;
IF to_regclass('public.native_run_finalizations') IS NULL THEN
  CREATE TABLE "native_run_finalizations" (
      "run_id" UUID NOT NULL,
      "company_id" UUID NOT NULL,
      "issue_id" UUID NOT NULL,
      "phase" TEXT NOT NULL,
      "attempt" INTEGER NOT NULL DEFAULT 0,
      "lease_owner" TEXT,
      "lease_expires_at" TIMESTAMPTZ(6),
      "result_id" UUID,
      "assessment_id" UUID,
      "decision_id" UUID,
      "failure_code" TEXT,
      "failure_detail" JSONB,
      "next_attempt_at" TIMESTAMPTZ(6),
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "native_run_finalizations_pkey" PRIMARY KEY ("run_id")
  );
  INSERT INTO "reclaim_created_tables" ("table_name") VALUES ('native_run_finalizations') ON CONFLICT DO NOTHING;
END IF;
END $$;

-- 3. Reclaim's inventions, replaced by Paperclip's issue_recovery_actions.
DO $$ BEGIN
IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = 'native_workspace_exports') THEN
  DROP TABLE IF EXISTS "native_workspace_exports";
  DELETE FROM "reclaim_created_tables" WHERE "table_name" = 'native_workspace_exports';
END IF;
IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = 'native_run_recovery_actions') THEN
  DROP TABLE IF EXISTS "native_run_recovery_actions";
  DELETE FROM "reclaim_created_tables" WHERE "table_name" = 'native_run_recovery_actions';
END IF;
END $$;

-- 4. Paperclip columns the checks read, added to mirrors Reclaim created (only those).
DO $$ BEGIN
IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = 'heartbeat_runs') THEN
  ALTER TABLE "heartbeat_runs" ADD COLUMN IF NOT EXISTS "runner_profile_json" JSONB;
END IF;
IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = 'issue_recovery_actions') THEN
  ALTER TABLE "issue_recovery_actions" ADD COLUMN IF NOT EXISTS "owner_type" TEXT NOT NULL DEFAULT 'agent';
  ALTER TABLE "issue_recovery_actions" ADD COLUMN IF NOT EXISTS "cause" TEXT NOT NULL DEFAULT '';
END IF;
END $$;

-- 5. Reclaim's own: a native session copy renamed to `.retiring-<UUID>` whose expiry
-- committed. Written in the job's transaction, so a row exists exactly when that
-- transaction committed: a later batch finishes such a copy (`.expired-<UUID>`, deletion)
-- and restores only copies without a row. `path` is relative to the durable-sessions root.
CREATE TABLE IF NOT EXISTS "reclaim_confirmed_retirements" (
    "path" TEXT NOT NULL,
    "company_id" TEXT,
    "confirmed_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reclaim_confirmed_retirements_pkey" PRIMARY KEY ("path")
);
