/**
 * The database reads and writes of this domain (SQL in the .sql files beside this one). Those
 * of a job's transaction are prepared statements on that transaction's own connection
 * (db/statements.ts): planned once per connection, not compiled and planned on every batch.
 */
import { runStatementIn, type Db, type Tx } from "../../db";
import { statement } from "../../db/sql";
import type { LiveSession, SessionFacts } from "./rules";
import type { ControlPlaneState } from "./survey";

export interface SessionInput extends ControlPlaneState {
  scope: string;
}

const SESSION_FACTS = statement(__dirname, "session-facts.sql");
const LOCK_SESSION_ROWS = statement(__dirname, "lock-session-rows.sql");
const DELETE_TASK_SESSIONS = statement(__dirname, "delete-task-sessions.sql");
const CONFIRMED_RETIREMENTS = statement(__dirname, "confirmed-retirements.sql");
const READ_LIVENESS = statement(__dirname, "read-liveness.sql");
const STORE_LIVENESS = statement(__dirname, "store-liveness.sql");
const CONFIRM_RETIREMENTS = statement(__dirname, "confirm-retirements.sql");
const FORGET_RETIREMENTS = statement(__dirname, "forget-retirements.sql");

export async function sessionFacts(tx: Tx, sessions: SessionInput[]): Promise<Map<string, SessionFacts>> {
  if (sessions.length === 0) return new Map();
  const rows = await runStatementIn<SessionFacts>(tx, SESSION_FACTS, [JSON.stringify(sessions)]);
  return new Map(rows.map((r) => [r.scope, r]));
}

export async function lockSessionRows(tx: Tx, facts: SessionFacts[]): Promise<void> {
  if (facts.length === 0) return;
  await runStatementIn(tx, LOCK_SESSION_ROWS, [
    JSON.stringify({
      runIds: facts.flatMap((f) => f.run_ids),
      issueIds: facts.flatMap((f) => f.issue_ids),
      taskSessionIds: facts.flatMap((f) => f.task_session_ids),
    }),
  ]);
}

export async function deleteTaskSessions(tx: Tx, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await runStatementIn<{ id: string }>(tx, DELETE_TASK_SESSIONS, [JSON.stringify(ids)]);
  return rows.map((r) => r.id);
}

export async function readLiveness(
  db: Db | Tx,
): Promise<{ sessions: LiveSession[]; reportedAt: Date } | null> {
  const [row] = await runStatementIn<{ sessions: LiveSession[]; reported_at: Date; received_at: Date }>(
    db,
    READ_LIVENESS,
    [],
  );
  if (!row) return null;
  // Clamped when stored (store-liveness.sql); a row stored before that is clamped here.
  const reportedAt = row.reported_at < row.received_at ? row.reported_at : row.received_at;
  return { sessions: row.sessions, reportedAt };
}

export async function storeLiveness(
  db: Db | Tx,
  sessions: LiveSession[],
  reportedAt: Date,
  receivedAt: Date,
): Promise<void> {
  await runStatementIn(db, STORE_LIVENESS, [JSON.stringify(sessions), reportedAt, receivedAt]);
}

/**
 * Copies renamed to `.retiring-<UUID>` whose expiry is committed: recorded in the job's
 * transaction, so a row exists exactly when that transaction committed (paths relative to
 * the durable-sessions root).
 */
export async function confirmRetirements(
  tx: Tx,
  items: { path: string; companyId: string | null }[],
): Promise<void> {
  if (items.length === 0) return;
  await runStatementIn(tx, CONFIRM_RETIREMENTS, [
    JSON.stringify(items.map((i) => ({ path: i.path, companyId: i.companyId }))),
  ]);
}

/**
 * The confirmed `.retiring-*` paths (their transaction committed) among those listed under
 * the lock in these folders (relative, e.g. `<session>/failover-backups/`), one statement for
 * a whole batch; the folders' records of names no longer there are deleted by it
 * (`confirmed-retirements.sql`).
 */
export async function confirmedRetirementsIn(
  tx: Tx,
  folders: { folder: string; retiring: string[] }[],
): Promise<Set<string>> {
  if (folders.length === 0) return new Set();
  const rows = await runStatementIn<{ path: string }>(tx, CONFIRMED_RETIREMENTS, [JSON.stringify(folders)]);
  return new Set(rows.map((r) => r.path));
}

/** The copy left `.retiring-*` (renamed to `.expired-*`, or gone): its record goes too. */
export async function forgetRetirements(db: Db | Tx, paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  await runStatementIn(db, FORGET_RETIREMENTS, [JSON.stringify(paths)]);
}
