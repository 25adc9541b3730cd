/**
 * Applies the committed migrations in prisma/migrations with Prisma's own `migrate deploy`
 * (wasm schema engine, prisma/migration-adapter.ts). The same function serves
 * `npm run migrate`, the demo and the test suite's template database.
 *
 * On Paperclip's own database the migrations create only what is missing; on an empty
 * database they also create the mirror of Paperclip's tables. A database named in the URL
 * that does not exist yet is created first (development and demo machines).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const run = promisify(execFile);

/**
 * The repository: the first folder above this file that holds prisma/schema.prisma (the
 * sources are four levels below it, the compiled dist/ tree five).
 */
function repositoryRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "prisma", "schema.prisma"))) return dir;
    if (dir === path.dirname(dir)) throw new Error(`no prisma/schema.prisma above ${__dirname}`);
  }
}

export const REPO_ROOT = repositoryRoot();
const PRISMA_CLI = path.join(REPO_ROOT, "node_modules/prisma/build/index.js");
const PRISMA_CONFIG = path.join(REPO_ROOT, "prisma/prisma.config.ts");

export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!name) throw new Error("DATABASE_URL names no database");
  const probe = new pg.Client({ connectionString: databaseUrl });
  try {
    await probe.connect();
    return;
  } catch (error) {
    if ((error as { code?: string }).code !== "3D000") throw error; // invalid_catalog_name
  } finally {
    await probe.end().catch(() => undefined);
  }
  url.pathname = "/postgres";
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } catch (error) {
    if ((error as { code?: string }).code !== "42P04") throw error; // created concurrently
  } finally {
    await admin.end();
  }
}

export async function applyMigrations(databaseUrl: string): Promise<string> {
  await ensureDatabase(databaseUrl);
  const { stdout } = await run(
    process.execPath,
    [
      "-r",
      path.join(REPO_ROOT, "prisma/cli-preload.js"),
      PRISMA_CLI,
      "migrate",
      "deploy",
      "--config",
      PRISMA_CONFIG,
    ],
    { cwd: REPO_ROOT, env: { ...process.env, DATABASE_URL: databaseUrl, PRISMA_HIDE_UPDATE_MESSAGE: "1" } },
  );
  return stdout;
}
