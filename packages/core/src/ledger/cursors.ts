/**
 * Continuation cursors (table reclaim_cursors): where the next batch of a domain and scope
 * resumes, one per named walk (`folders`, `leftovers`, ...), so a stuck entry in one walk
 * never blocks another. Read and written as prepared statements (db/statements.ts): inside a
 * check's transaction on that transaction's own connection, otherwise on the client's pool;
 * every batch of a walking domain reads and writes them, and Prisma compiles each of its calls.
 */
import { runStatementIn, statement, type Db, type Tx } from "../db";
import type { LedgerKey } from "./deadlines";

const READ_CURSOR = statement(__dirname, "read-cursor.sql");
const WRITE_CURSOR = statement(__dirname, "write-cursor.sql");

export async function readCursor(db: Db | Tx, key: LedgerKey, name: string): Promise<string | null> {
  const rows = await runStatementIn<{ value: string }>(db, READ_CURSOR, [key.domain, key.scope, name]);
  return rows[0]?.value ?? null;
}

/** `null` clears the cursor: the walk starts from the beginning next time. */
export async function writeCursor(
  db: Db | Tx,
  key: LedgerKey,
  name: string,
  value: string | null,
  now: Date,
): Promise<void> {
  await runStatementIn(db, WRITE_CURSOR, [key.domain, key.scope, name, value, now]);
}
