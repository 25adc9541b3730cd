/**
 * Raw SQL that Prisma's query API cannot express (advisory locks, bulk upserts, the
 * retention checks' joins) lives in `.sql` files beside the code that runs it, each opening
 * with a comment that lists its parameters and outputs. This is the one place they are
 * loaded; a file is read once per process.
 */
import { readFileSync } from "node:fs";
import path from "node:path";

const cache = new Map<string, string>();

/** `sqlFile(__dirname, "claim-due.sql")` */
export function sqlFile(dir: string, name: string): string {
  const file = path.join(dir, name);
  let text = cache.get(file);
  if (text === undefined) {
    text = readFileSync(file, "utf8");
    cache.set(file, text);
  }
  return text;
}

/**
 * A `.sql` file as a named prepared statement for node-postgres (db/statements.ts): each
 * connection parses it once and then only binds and executes it. The name is the file's
 * path below `src/`, so one file is one statement in every process.
 */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

const SRC = path.resolve(__dirname, "..");

/** `statement(__dirname, "claim-due.sql")` */
export function statement(dir: string, name: string): Statement {
  return { name: `reclaim/${path.relative(SRC, path.join(dir, name))}`, text: sqlFile(dir, name) };
}
