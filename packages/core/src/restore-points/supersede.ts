/**
 * supersede -> `superseded` (a newer restore point replaced it); its object is deleted by the
 * next batch. An `expiring` one cannot be superseded: its expiry hook runs first.
 */
import type { Db } from "../db";
import { findRestorePoint } from "./find";
import { wrongState } from "./refusals";
import { dueFor, ledgerResult, type LedgerResult } from "./view";
import type { RestorePointStatus } from "./vocabulary";

/** Already on its way out: superseding again answers with the row as it is. */
const GOING: RestorePointStatus[] = ["superseded", "delete_requested", "deleted"];

export async function supersedeRestorePoint(
  db: Db,
  companyId: string,
  id: string,
  now: Date,
): Promise<LedgerResult> {
  const row = await findRestorePoint(db, companyId, id);
  if (GOING.includes(row.status as RestorePointStatus)) return ledgerResult(row);
  if (row.status !== "active") throw wrongState(row, "supersede");
  const changed = await db.executionWorkspaceRestorePoint.updateMany({
    where: { id, companyId, status: "active" },
    data: { status: "superseded", deleteAfter: null, retryAt: null, lastError: null, updatedAt: now },
  });
  const current = await findRestorePoint(db, companyId, id);
  if (changed.count === 0) {
    if (GOING.includes(current.status as RestorePointStatus)) return ledgerResult(current);
    throw wrongState(current, "supersede");
  }
  return ledgerResult(current, [dueFor(companyId, "superseded", now)]);
}
