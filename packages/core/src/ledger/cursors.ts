/**
 * Continuation cursors (table reclaim_cursors): where the next batch of a domain and scope
 * resumes, one per named walk (`folders`, `leftovers`, ...), so a stuck entry in one walk
 * never blocks another.
 */
import type { Db, Tx } from "../db";
import type { LedgerKey } from "./deadlines";

export async function readCursor(db: Db | Tx, key: LedgerKey, name: string): Promise<string | null> {
  const row = await db.reclaimCursor.findUnique({
    where: { domain_companyId_name: { domain: key.domain, companyId: key.scope, name } },
  });
  return row?.value ?? null;
}

/** `null` clears the cursor: the walk starts from the beginning next time. */
export async function writeCursor(
  db: Db | Tx,
  key: LedgerKey,
  name: string,
  value: string | null,
  now: Date,
): Promise<void> {
  const id = { domain: key.domain, companyId: key.scope, name };
  if (value === null) {
    await db.reclaimCursor.deleteMany({ where: id });
    return;
  }
  await db.reclaimCursor.upsert({
    where: { domain_companyId_name: id },
    create: { ...id, value, updatedAt: now },
    update: { value, updatedAt: now },
  });
}
