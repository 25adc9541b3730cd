// Jest global setup: one migrated template database per run (see postgres.ts).
import { applyMigrations } from "@reclaim/core/src/db/migrate";
import { databaseUrl, dropStaleDatabases, uniqueName, withAdmin } from "./postgres";
import { startTestS3 } from "./s3/rgw";

export default async function globalSetup(): Promise<void> {
  await dropStaleDatabases();
  const template = uniqueName("tpl");
  await withAdmin((c) => c.query(`CREATE DATABASE "${template}"`));
  await applyMigrations(databaseUrl(template));
  // Test workers are forked after this and inherit the variable.
  process.env.RECLAIM_TEST_TEMPLATE_DB = template;
  // The real S3 server for the storage contract tests (Ceph RGW, ~12 s the first time).
  startTestS3();
}
