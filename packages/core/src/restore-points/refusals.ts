/** How a ledger operation refuses: bad input (400, the field named) or a status that does not allow it (409). */
import type { ExecutionWorkspaceRestorePointModel as Row } from "../db/generated/models/ExecutionWorkspaceRestorePoint";
import { ReclaimError } from "../errors";

export function invalid(field: string, message: string): ReclaimError {
  return new ReclaimError("RECLAIM_ERR_VALIDATION", { message: `${field}: ${message}`, field });
}

export function wrongState(row: Row, action: string): ReclaimError {
  return new ReclaimError("RECLAIM_ERR_RESTORE_POINT_STATE", {
    message: `restore point ${row.id} is ${row.status}: cannot ${action}`,
    field: "status",
  });
}
