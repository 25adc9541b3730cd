/**
 * The driver adapter Prisma's CLI uses for `migrate deploy`, `migrate status` and
 * `migrate diff` with the wasm schema engine (Prisma 6.19, `engine: "js"`): the native
 * schema engine binary cannot be downloaded on our machines (../shared/notes/toolchain.md).
 *
 * It wraps @prisma/adapter-pg and fixes, each where it is needed:
 *  1. Migration history lives in a private `reclaim` schema (search_path of the CLI's
 *     connection). Prisma's "is this database empty?" check (P3005) looks only at that
 *     schema, so attaching to Paperclip's populated database needs no manual baseline,
 *     and `_prisma_migrations` never lands among Paperclip's tables.
 *  2. Every migration script runs against `public` (SET LOCAL inside the script's own
 *     implicit transaction), where Paperclip's tables and Reclaim's `reclaim_*` tables live.
 *  3. adapter-pg's executeScript splits a script on `;`, which cuts `$$` plpgsql bodies
 *     (triggers) apart and can apply half a migration. We send the whole script as one
 *     simple query: PostgreSQL runs a multi-statement simple query as one transaction,
 *     so a migration applies completely or not at all.
 *  4. Introspection returns the pg types `name` (oid 19) and `"char"` (oid 18), which
 *     adapter-pg cannot map ("Column type 'name' could not be deserialized", prisma issue
 *     27403); they are text on the wire, so we present them as text (oid 25).
 *  5. The shadow database (`migrate diff --from-migrations`) is built from separate
 *     host/port/user/password/database fields: a connection string would override the
 *     database name. Its pool is closed before `DROP DATABASE ... WITH (FORCE)`.
 */
import { PrismaPg } from "@prisma/adapter-pg";
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { randomUUID } from "node:crypto";
import pg from "pg";

export const HISTORY_SCHEMA = "reclaim";

const PG_NAME = 19;
const PG_CHAR = 18;
const PG_TEXT = 25;

type PgField = { dataTypeID: number };
type Patchable = { performIO(query: unknown): Promise<{ fields: PgField[] }> };

function presentNameAsText<T>(queryable: T): T {
  const target = queryable as unknown as Patchable;
  const performIO = target.performIO.bind(target);
  target.performIO = async (query) => {
    const result = await performIO(query);
    for (const field of result.fields) {
      if (field.dataTypeID === PG_NAME || field.dataTypeID === PG_CHAR) field.dataTypeID = PG_TEXT;
    }
    return result;
  };
  return queryable;
}

function connectionFields(url: string, database?: string): pg.PoolConfig {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: u.port ? Number(u.port) : 5432,
    user: decodeURIComponent(u.username) || undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: database ?? (decodeURIComponent(u.pathname.slice(1)) || undefined),
    // Unqualified names in Prisma's own bookkeeping resolve to the history schema.
    options: `-c search_path=${HISTORY_SCHEMA}`,
    // The CLI never closes its pool; without this the process lingers for the 10 s idle timeout.
    allowExitOnIdle: true,
  };
}

async function open(config: pg.PoolConfig, release?: () => Promise<void>): Promise<SqlDriverAdapter> {
  const adapter = presentNameAsText(await new PrismaPg(config, { schema: HISTORY_SCHEMA }).connect());
  const pool = adapter.underlyingDriver();
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${HISTORY_SCHEMA}`);
  adapter.executeScript = async (script: string) => {
    await pool.query(`SET LOCAL search_path TO public;\n${script}`);
  };
  const startTransaction = adapter.startTransaction.bind(adapter);
  adapter.startTransaction = async (isolationLevel) =>
    presentNameAsText(await startTransaction(isolationLevel));
  if (release) {
    const dispose = adapter.dispose.bind(adapter);
    adapter.dispose = async () => {
      await dispose();
      await release();
    };
  }
  return adapter;
}

export function migrationAdapter(url: string): SqlMigrationAwareDriverAdapterFactory {
  return {
    provider: "postgres",
    adapterName: "@prisma/adapter-pg",
    connect: () => open(connectionFields(url)),
    async connectToShadowDb() {
      const shadow = `reclaim_shadow_${randomUUID().replace(/-/g, "")}`;
      const admin = new pg.Client(connectionFields(url));
      await admin.connect();
      await admin.query(`CREATE DATABASE "${shadow}"`);
      await admin.end();
      return open(connectionFields(url, shadow), async () => {
        const dropper = new pg.Client(connectionFields(url));
        await dropper.connect();
        await dropper.query(`DROP DATABASE IF EXISTS "${shadow}" WITH (FORCE)`);
        await dropper.end();
      });
    },
  };
}
