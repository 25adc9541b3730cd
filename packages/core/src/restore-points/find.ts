/** One restore point of a company; another company's, or none, is a 404 naming `id`. */
import type { Db, Tx } from "../db";
import type { ExecutionWorkspaceRestorePointModel as Row } from "../db/generated/models/ExecutionWorkspaceRestorePoint";
import { ReclaimError } from "../errors";

export async function findRestorePoint(db: Db | Tx, companyId: string, id: string): Promise<Row> {
  const row = await db.executionWorkspaceRestorePoint.findFirst({ where: { id, companyId } });
  if (!row) {
    throw new ReclaimError("RECLAIM_ERR_RESTORE_POINT_NOT_FOUND", {
      message: `id: no restore point ${id} in company ${companyId}`,
      field: "id",
    });
  }
  return row;
}
