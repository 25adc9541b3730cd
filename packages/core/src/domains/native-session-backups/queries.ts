/** The database reads and writes of this domain (SQL in the .sql files beside this one). */
import type { Db, Tx } from "../../db";
import { sqlFile } from "../../db/sql";
import type { LiveSession, SessionFacts } from "./rules";
import type { ControlPlaneState } from "./survey";

export interface SessionInput extends ControlPlaneState {
  scope: string;
}

export async function sessionFacts(tx: Tx, sessions: SessionInput[]): Promise<Map<string, SessionFacts>> {
  if (sessions.length === 0) return new Map();
  const rows = await tx.$queryRawUnsafe<SessionFacts[]>(
    sqlFile(__dirname, "session-facts.sql"),
    JSON.stringify(sessions),
  );
  return new Map(rows.map((r) => [r.scope, r]));
}

export async function lockSessionRows(tx: Tx, facts: SessionFacts[]): Promise<void> {
  if (facts.length === 0) return;
  await tx.$queryRawUnsafe(
    sqlFile(__dirname, "lock-session-rows.sql"),
    JSON.stringify({
      runIds: facts.flatMap((f) => f.run_ids),
      issueIds: facts.flatMap((f) => f.issue_ids),
      taskSessionIds: facts.flatMap((f) => f.task_session_ids),
    }),
  );
}

export async function deleteTaskSessions(tx: Tx, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
    sqlFile(__dirname, "delete-task-sessions.sql"),
    JSON.stringify(ids),
  );
  return rows.map((r) => r.id);
}

export async function readLiveness(
  db: Db | Tx,
): Promise<{ sessions: LiveSession[]; reportedAt: Date } | null> {
  const row = await db.reclaimNativeSessionLiveness.findUnique({ where: { instance: "instance" } });
  if (!row) return null;
  // Clamped when stored (store-liveness.sql); a row stored before that is clamped here.
  const reportedAt = row.reportedAt < row.receivedAt ? row.reportedAt : row.receivedAt;
  return { sessions: row.sessions as unknown as LiveSession[], reportedAt };
}

export async function storeLiveness(
  db: Db | Tx,
  sessions: LiveSession[],
  reportedAt: Date,
  receivedAt: Date,
): Promise<void> {
  await db.$executeRawUnsafe(
    sqlFile(__dirname, "store-liveness.sql"),
    JSON.stringify(sessions),
    reportedAt,
    receivedAt,
  );
}
