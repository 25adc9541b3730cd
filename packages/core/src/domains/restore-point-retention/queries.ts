/** The database reads and writes of the retention worker (SQL in the .sql files beside this one). */
import type { Db, Tx } from "../../db";
import { sqlFile } from "../../db/sql";
import type { RestorePointStatus } from "../../restore-points/vocabulary";
import type { DueRow, TreeState } from "./rules";

const sql = (name: string) => sqlFile(__dirname, name);
const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

export interface DueWindow {
  now: Date;
  /** Pending rows created before this were abandoned. */
  pendingBefore: Date;
}

/** The companies among `companyIds` with a restore point in one of `statuses` (one query). */
export async function companiesWithRestorePoints(
  db: Db | Tx,
  companyIds: string[],
  statuses: RestorePointStatus[],
): Promise<Set<string>> {
  const rows = await db.$queryRawUnsafe<{ company_id: string }[]>(
    sql("companies-with-restore-points.sql"),
    JSON.stringify(companyIds),
    JSON.stringify(statuses),
  );
  return new Set(rows.map((r) => r.company_id));
}

export async function dueWork(
  tx: Tx,
  companyId: string,
  window: DueWindow,
  limit: number,
): Promise<DueRow[]> {
  return tx.$queryRawUnsafe<DueRow[]>(
    sql("due-work.sql"),
    companyId,
    window.now,
    window.pendingBefore,
    limit,
  );
}

export async function treeStates(
  tx: Tx,
  companyId: string,
  sourceIssueIds: string[],
): Promise<Map<string, TreeState>> {
  if (sourceIssueIds.length === 0) return new Map();
  // The planner cannot estimate a recursive walk and prices it above jit_above_cost, so
  // PostgreSQL would spend ~20 ms compiling a query that runs in ~3 ms. For this
  // transaction only (the job's, under its lock).
  await tx.$executeRawUnsafe("SET LOCAL jit = off");
  const rows = await tx.$queryRawUnsafe<TreeState[]>(
    sql("tree-state.sql"),
    JSON.stringify([...new Set(sourceIssueIds)]),
    companyId,
  );
  return new Map(rows.map((r) => [r.source_issue_id, r]));
}

export async function setDeleteAfter(
  tx: Tx,
  updates: { id: string; deleteAfter: Date | null }[],
  now: Date,
): Promise<string[]> {
  if (updates.length === 0) return [];
  const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
    sql("set-delete-after.sql"),
    JSON.stringify(updates.map((u) => ({ id: u.id, deleteAfter: u.deleteAfter?.toISOString() ?? null }))),
    now,
  );
  return ids(rows);
}

/** Moves rows `from` -> `to`; returns the ids that moved (others changed meanwhile). */
export async function transition(
  tx: Tx,
  rowIds: string[],
  from: readonly RestorePointStatus[],
  to: RestorePointStatus,
  now: Date,
): Promise<string[]> {
  if (rowIds.length === 0) return [];
  const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
    sql("transition.sql"),
    JSON.stringify(rowIds),
    JSON.stringify(from),
    to,
    now,
  );
  return ids(rows);
}

export async function recordFailures(
  tx: Tx,
  failures: { id: string; error: string }[],
  statuses: readonly RestorePointStatus[],
  retryAt: Date,
  now: Date,
): Promise<string[]> {
  if (failures.length === 0) return [];
  const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
    sql("record-failure.sql"),
    JSON.stringify(failures),
    JSON.stringify(statuses),
    retryAt,
    now,
  );
  return ids(rows);
}

export interface NextDue {
  due_now: boolean;
  review_at: Date | null;
  pending_since: Date | null;
  retry_at: Date | null;
}

export async function nextDue(tx: Tx, companyId: string, window: DueWindow): Promise<NextDue> {
  const rows = await tx.$queryRawUnsafe<NextDue[]>(
    sql("next-due.sql"),
    companyId,
    window.now,
    window.pendingBefore,
  );
  return rows[0]!;
}

export async function startupDue(
  db: Db | Tx,
  captureGraceMs: number,
): Promise<{ company_id: string; due_at: Date }[]> {
  return db.$queryRawUnsafe(sql("startup-due.sql"), captureGraceMs);
}
