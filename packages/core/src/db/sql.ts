/**
 * Raw SQL that Prisma's query API cannot express (advisory locks, bulk upserts, the
 * retention checks' joins) lives in `.sql` files beside the code that runs it, each opening
 * with a comment that lists its parameters and outputs. This is the one place they are
 * loaded; a file is read once per process.
 */
import { createHash } from "node:crypto";
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
 * path below `src/`, so one file is one statement in every process; PostgreSQL keeps 63
 * bytes of a name, so a longer path is cut and told apart by a hash of the whole.
 */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

const SRC = path.resolve(__dirname, "..");

/** `statement(__dirname, "claim-due.sql")` */
export function statement(dir: string, name: string): Statement {
  return {
    name: statementName(`reclaim/${path.relative(SRC, path.join(dir, name))}`),
    text: sqlFile(dir, name),
  };
}

/** PostgreSQL's longest name (NAMEDATALEN - 1 bytes). */
const MAX_NAME = 63;

function statementName(full: string): string {
  if (Buffer.byteLength(full) <= MAX_NAME) return full;
  const hash = createHash("sha256").update(full).digest("hex").slice(0, 12);
  return `${full.slice(0, MAX_NAME - hash.length - 1)}~${hash}`;
}
