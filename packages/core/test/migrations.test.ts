import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { applyMigrations, REPO_ROOT } from "../src/db/migrate";
import { createEmptyDatabase, type TestDatabase } from "@reclaim/testkit";

const PAPERCLIP_TABLES = [
  "companies",
  "issues",
  "heartbeat_runs",
  "execution_workspaces",
  "environment_leases",
  "issue_recovery_actions",
  "agent_task_sessions",
  "company_skills",
  "company_skill_versions",
  "native_run_finalizations",
  "activity_log",
  "workspace_runtime_services",
  "project_workspaces",
  "execution_workspace_runtime_leases",
];

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Columns, types, nullability, defaults, constraints, indexes and triggers of the given tables. */
async function catalog(url: string, tables: string[]) {
  const columns = await query(
    url,
    `SELECT table_name, column_name, data_type, is_nullable, column_default
       FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ANY($1)
      ORDER BY table_name, ordinal_position`,
    [tables],
  );
  const constraints = await query(
    url,
    `SELECT conrelid::regclass::text AS t, conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE conrelid::regclass::text = ANY($1) ORDER BY 1, 2`,
    [tables],
  );
  const indexes = await query(
    url,
    `SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = ANY($1) ORDER BY 1, 2`,
    [tables],
  );
  const triggers = await query(
    url,
    `SELECT tgrelid::regclass::text AS t, tgname, pg_get_triggerdef(oid) AS def FROM pg_trigger
      WHERE NOT tgisinternal AND tgrelid::regclass::text = ANY($1) ORDER BY 1, 2`,
    [tables],
  );
  return { columns, constraints, indexes, triggers };
}

/**
 * The only additions Reclaim makes to Paperclip's tables, because the spec asks for them:
 * the restore-point triggers on `issues` (status or parent change, delete) and `companies`
 * (delete). They add rows to Reclaim's table and never change a Paperclip row or column.
 */
const SANCTIONED_TRIGGERS = [
  "companies.reclaim_restore_points_company_delete",
  "issues.reclaim_restore_points_issue_delete",
  "issues.reclaim_restore_points_issue_update",
];

/**
 * Paperclip's tables: as the snapshot of its migrations has them, or (current) with what its
 * current Drizzle schema adds (native runs, native_run_finalizations, ...).
 */
async function paperclipDatabase(current = false): Promise<TestDatabase> {
  const db = await createEmptyDatabase();
  for (const file of ["paperclip-public-schema.sql", ...(current ? ["paperclip-current-schema.sql"] : [])])
    await query(db.url, readFileSync(path.join(REPO_ROOT, "packages/testkit/fixtures", file), "utf8"));
  return db;
}

/** Every `.sql` file the services run (checks, ledger, locks, metrics). */
function statementFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== "generated") walk(full);
      else if (entry.isFile() && entry.name.endsWith(".sql")) found.push(full);
    }
  };
  for (const dir of ["packages/core/src", "apps/scheduler/src", "apps/worker/src"])
    walk(path.join(REPO_ROOT, dir));
  return found.sort();
}

describe("npm run migrate", () => {
  let db: TestDatabase;
  afterEach(async () => db && (await db.drop()));

  it("creates the Paperclip mirror and Reclaim's tables on an empty database", async () => {
    db = await createEmptyDatabase();
    await applyMigrations(db.url);
    const tables = (
      await query<{ table_name: string }>(
        db.url,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
      )
    ).map((r) => r.table_name);
    expect(tables).toEqual(
      expect.arrayContaining([...PAPERCLIP_TABLES, "reclaim_deadlines", "reclaim_batch_reports"]),
    );
    // A heartbeat_runs row with only the columns the brief names inserts into the mirror.
    await query(
      db.url,
      `INSERT INTO heartbeat_runs (id, company_id, status, started_at, finished_at, created_at)
       VALUES (gen_random_uuid(), gen_random_uuid(), 'succeeded', now(), now(), now())`,
    );
    const history = await query(db.url, "SELECT migration_name FROM reclaim._prisma_migrations");
    expect(history.length).toBeGreaterThan(0);
  });

  it("the mirror carries only Paperclip's own columns, with Paperclip's types", async () => {
    db = await createEmptyDatabase();
    await applyMigrations(db.url);
    const mirror = (await catalog(db.url, PAPERCLIP_TABLES)).columns;
    const real = await paperclipDatabase(true);
    try {
      const realColumns = (await catalog(real.url, PAPERCLIP_TABLES)).columns;
      const realType = new Map(realColumns.map((c) => [`${c.table_name}.${c.column_name}`, c.data_type]));
      for (const column of mirror) {
        expect([
          `${column.table_name}.${column.column_name}`,
          realType.get(`${column.table_name}.${column.column_name}`),
        ]).toEqual([`${column.table_name}.${column.column_name}`, column.data_type]);
      }
    } finally {
      await real.drop();
    }
  });

  it.each([
    ["as its migrations' snapshot has them", false],
    ["as its current schema defines them", true],
  ])(
    "on Paperclip's own database (%s) creates only what is missing and never alters a Paperclip table",
    async (_label, current) => {
      db = await paperclipDatabase(current);
      const all = (
        await query<{ table_name: string }>(
          db.url,
          "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
        )
      ).map((r) => r.table_name);
      const before = await catalog(db.url, all);
      await applyMigrations(db.url);
      await applyMigrations(db.url); // a second run is a no-op
      const after = await catalog(db.url, all);
      const added = after.triggers.filter((t) => !before.triggers.some((b) => b.tgname === t.tgname));
      expect(added.map((t) => `${t.t}.${t.tgname}`).sort()).toEqual(SANCTIONED_TRIGGERS);
      expect({ ...after, triggers: after.triggers.filter((t) => !added.includes(t)) }).toEqual(before);
      const created = (
        await query<{ table_name: string }>(
          db.url,
          "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND NOT (table_name = ANY($1))",
          [all],
        )
      ).map((r) => r.table_name);
      // Paperclip's current schema has native_run_finalizations: it is left as it is.
      expect(created).toEqual(
        expect.arrayContaining(
          current ? ["reclaim_deadlines"] : ["reclaim_deadlines", "native_run_finalizations"],
        ),
      );
      if (current) expect(created).not.toContain("native_run_finalizations");
      expect(created).not.toContain("_prisma_migrations");
    },
  );

  it.each([
    ["its migrations' snapshot", false],
    ["its current schema", true],
  ])(
    "every SQL statement Reclaim runs resolves on Paperclip's full tables of %s (prepared after migrating them)",
    async (_label, current) => {
      db = await paperclipDatabase(current);
      await applyMigrations(db.url);
      const files = statementFiles();
      expect(files.length).toBeGreaterThan(10);
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const failures: string[] = [];
        for (const [i, file] of files.entries()) {
          // PREPARE parses, resolves every table, column and type, and plans without running.
          await client
            .query(`PREPARE statement_${i} AS ${readFileSync(file, "utf8")}`)
            .catch((error: Error) => failures.push(`${path.relative(REPO_ROOT, file)}: ${error.message}`));
        }
        expect(failures).toEqual([]);
      } finally {
        await client.end();
      }
    },
  );
});
