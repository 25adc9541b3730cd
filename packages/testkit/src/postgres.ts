/**
 * PostgreSQL for tests: the global setup migrates one template database per Jest run;
 * every test file clones its own database from it (CREATE DATABASE ... TEMPLATE, ~50 ms)
 * and drops it afterwards. Names carry their creation time, so databases left behind by
 * a killed run are dropped by the next run after a few hours.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { createDb, type Db } from "@reclaim/core";

export const ADMIN_URL =
  process.env.RECLAIM_TEST_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const STALE_AFTER_SECONDS = 6 * 3600;

export function databaseUrl(name: string, admin = ADMIN_URL): string {
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

export function uniqueName(kind: "tpl" | "t"): string {
  return `reclaim_${kind}_${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString("hex")}`;
}

export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function dropDatabase(name: string): Promise<void> {
  await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

export async function dropStaleDatabases(): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  await withAdmin(async (c) => {
    const { rows } = await c.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname ~ '^reclaim_(tpl|t|shadow)_'",
    );
    for (const { datname } of rows) {
      const created = Number(datname.split("_")[2]);
      if (Number.isFinite(created) && now - created > STALE_AFTER_SECONDS) {
        await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
      }
    }
  });
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** A fresh, migrated database for one test file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = process.env.RECLAIM_TEST_TEMPLATE_DB;
  if (!template)
    throw new Error("RECLAIM_TEST_TEMPLATE_DB is not set: run tests through jest (global setup)");
  const name = uniqueName("t");
  await withAdmin((c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  return { name, url: databaseUrl(name), drop: () => dropDatabase(name) };
}

/** An empty database (no migrations), for migration tests. */
export async function createEmptyDatabase(): Promise<TestDatabase> {
  const name = uniqueName("t");
  await withAdmin((c) => c.query(`CREATE DATABASE "${name}"`));
  return { name, url: databaseUrl(name), drop: () => dropDatabase(name) };
}

/**
 * A migrated database of the calling test file's own and its client, made before the file's
 * tests and dropped after them (this registers the beforeAll and afterAll hooks, so call it at
 * the top of the file): `const file = fileDatabase(); let db: Db; beforeAll(() => (db = file.db()));`
 */
export function fileDatabase(): { db(): Db; database(): TestDatabase } {
  let database: TestDatabase | undefined;
  let db: Db | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = createDb(database.url);
  });
  afterAll(async () => {
    await db?.$disconnect();
    await database?.drop();
  });
  const made = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("fileDatabase: the file's database is made in its beforeAll");
    return value;
  };
  return { db: () => made(db), database: () => made(database) };
}
