/**
 * Rows of Paperclip's activity log (activity_log.ts), written as its `logActivity` writes
 * them for workspace events: actor `system`, entity `execution_workspace` and the workspace
 * id, details as JSON. Written in the transaction of the change they record.
 */
import type { Db, Tx } from "../db";
import { sqlFile } from "../db/sql";

/** The actor id Reclaim's rows carry (Paperclip's own reaper writes `workspace_terminality_reaper`). */
export const RECLAIM_ACTOR_ID = "reclaim";

export async function recordWorkspaceActivity(
  db: Db | Tx,
  input: {
    companyId: string;
    workspaceId: string;
    action: string;
    details: Record<string, unknown>;
    at: Date;
  },
): Promise<string> {
  const [row] = await db.$queryRawUnsafe<{ id: string }[]>(
    sqlFile(__dirname, "insert-activity.sql"),
    input.companyId,
    "system",
    RECLAIM_ACTOR_ID,
    input.action,
    "execution_workspace",
    input.workspaceId,
    JSON.stringify(input.details),
    input.at,
  );
  return row!.id;
}
