/**
 * request deletion -> `delete_requested`; a `pending` one waits for the capture grace,
 * because its capture may still be writing the object. An `expiring` one cannot be deleted
 * by request: its expiry hook runs first.
 */
import type { Db } from "../db";
import { LIMITS } from "../domains/restore-point-retention/config";
import { findRestorePoint } from "./find";
import { wrongState } from "./refusals";
import { dueFor, ledgerResult, type LedgerResult } from "./view";

export async function requestRestorePointDeletion(
  db: Db,
  companyId: string,
  id: string,
  now: Date,
): Promise<LedgerResult> {
  const row = await findRestorePoint(db, companyId, id);
  if (row.status === "delete_requested" || row.status === "deleted") return ledgerResult(row);
  if (!["pending", "active", "superseded"].includes(row.status)) throw wrongState(row, "request deletion");
  // A pending capture may still be writing its object: delete once its grace has ended.
  const graceEnd = new Date(row.createdAt.getTime() + LIMITS.captureGraceMs);
  const retryAt = row.status === "pending" && graceEnd > now ? graceEnd : null;
  const changed = await db.executionWorkspaceRestorePoint.updateMany({
    where: { id, companyId, status: row.status },
    data: { status: "delete_requested", deleteAfter: null, retryAt, lastError: null, updatedAt: now },
  });
  const current = await findRestorePoint(db, companyId, id);
  if (changed.count === 0) {
    if (current.status === "delete_requested" || current.status === "deleted") return ledgerResult(current);
    throw wrongState(current, "request deletion");
  }
  return ledgerResult(current, [dueFor(companyId, "delete_requested", retryAt ?? now)]);
}
