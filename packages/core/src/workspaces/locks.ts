/**
 * The two locks Paperclip's server takes around a workspace's lifecycle, which Reclaim takes
 * the same way so neither side changes a workspace under the other (docs/paperclip-tables.md):
 *
 *  - the issue's source lock: the row lock on the issue (`SELECT ... FOR UPDATE`). Every
 *    Paperclip write to the issue (status, parent, binding) waits for it;
 *  - the workspace lifecycle lock: `pg_advisory_xact_lock(hashtextextended(
 *    'execution_workspace_lifecycle:' || <workspace id>, 0))`, Paperclip's
 *    acquireExecutionWorkspaceLifecycleLock, taken by its reopen, archive and cleanup.
 *
 * Both are transaction-scoped. Order: the issue's source lock first, then the lifecycle lock
 * (a deadlock with another order is detected by PostgreSQL and fails one transaction, which
 * then keeps everything and retries). Expiration tries them (`try*`: busy means skip and
 * retry later); a reopen waits for them.
 */
import type { Tx } from "../db";
import { sqlFile } from "../db/sql";

/** Waits for the issue's source lock; false when the issue does not exist in the company. */
export async function lockIssueSource(tx: Tx, companyId: string, issueId: string): Promise<boolean> {
  const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
    sqlFile(__dirname, "issue-source-lock.sql"),
    issueId,
    companyId,
  );
  return rows.length > 0;
}

/** The issue's source lock without waiting: `busy` when another transaction holds it. */
export async function tryLockIssueSource(
  tx: Tx,
  companyId: string,
  issueId: string,
): Promise<"locked" | "busy" | "missing"> {
  const [row] = await tx.$queryRawUnsafe<{ id: string | null; exists: boolean }[]>(
    sqlFile(__dirname, "issue-source-try-lock.sql"),
    issueId,
    companyId,
  );
  if (!row?.exists) return "missing";
  return row.id === null ? "busy" : "locked";
}

export async function lockWorkspaceLifecycle(tx: Tx, workspaceId: string): Promise<void> {
  await tx.$queryRawUnsafe(sqlFile(__dirname, "lifecycle-lock.sql"), workspaceId);
}

export async function tryLockWorkspaceLifecycle(tx: Tx, workspaceId: string): Promise<boolean> {
  const [row] = await tx.$queryRawUnsafe<{ acquired: boolean }[]>(
    sqlFile(__dirname, "try-lifecycle-lock.sql"),
    workspaceId,
  );
  return row?.acquired === true;
}
