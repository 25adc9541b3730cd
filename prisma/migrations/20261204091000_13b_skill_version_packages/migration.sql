-- Reclaim (issue 13b): how a cached skill version can be rebuilt.
--
-- The spec evicts a skill version's cache only when the version can be rebuilt: from a
-- durable package in the configured storage (reachable now), or, for a git package, from its
-- saved recipe (repository and exact commit); authored or legacy packages without a recipe
-- need independent external durability. Paperclip's schema (company_skills,
-- company_skill_versions) records none of this, so this Paperclip-style table is defined by
-- Reclaim, created only where absent and recorded in reclaim_created_tables: on a Paperclip
-- database nothing writes it, no version has a row, and every cache is kept
-- (`rebuild_source_unknown`). One row per version:
--   kind                storage | git_recipe | authored | legacy
--   storage_key         storage: the package object's key under its company
--                       (companies/<company>/<storage_key> in the configured storage)
--   byte_size           storage: the package's size; the object must have it
--   recipe              git_recipe: {"repository": text, "commit": 40 or 64 hex digits}
--   externally_durable  authored / legacy: an independent external copy exists
-- The whole script runs as one transaction (prisma/migration-adapter.ts).

DO $$ BEGIN
IF to_regclass('public.company_skill_version_packages') IS NULL THEN
  CREATE TABLE "company_skill_version_packages" (
      "id" UUID NOT NULL DEFAULT gen_random_uuid(),
      "company_id" UUID NOT NULL,
      "company_skill_version_id" UUID NOT NULL,
      "kind" TEXT NOT NULL,
      "storage_key" TEXT,
      "byte_size" BIGINT,
      "recipe" JSONB,
      "externally_durable" BOOLEAN NOT NULL DEFAULT false,
      "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
      "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

      CONSTRAINT "company_skill_version_packages_pkey" PRIMARY KEY ("id")
  );
  CREATE UNIQUE INDEX "company_skill_version_packages_company_skill_version_id_key"
      ON "company_skill_version_packages"("company_skill_version_id");
  INSERT INTO "reclaim_created_tables" ("table_name") VALUES ('company_skill_version_packages') ON CONFLICT DO NOTHING;
END IF;
END $$;
