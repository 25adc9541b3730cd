/**
 * Advisory locks, all transaction-scoped (released by commit or rollback, so a killed
 * process never leaves one held). Namespaces shared with the Paperclip server are part of
 * the contract between the two and are listed here; a change breaks mutual exclusion.
 */
import type pg from "pg";
import type { Db, Tx } from "./client";
import { statement } from "./sql";
import { prismaTransaction, runStatement, runStatementIn } from "./statements";

export const LOCK_NAMESPACES = {
  /** Reclaim's deadline ledger, per domain and scope: serializes ledger writes with queue sync. */
  ledger: "reclaim.ledger",
  /**
   * A native run's finalization ownership (Paperclip's finalization and export hold it while
   * they own the run; key: the run id).
   */
  nativeRunFinalization: "paperclip.native_run_finalization",
} as const;

/** The company-scoped lock a domain's job holds (`reclaim.<domain>`, key: company id or "instance"). */
export function domainLockNamespace(domain: string): string {
  return `reclaim.${domain}`;
}

const ADVISORY_LOCK = statement(__dirname, "sql/advisory-lock.sql");
const ADVISORY_LOCKS = statement(__dirname, "sql/advisory-locks.sql");
const TRY_ADVISORY_LOCK = statement(__dirname, "sql/try-advisory-lock.sql");
const TRY_ADVISORY_LOCKS = statement(__dirname, "sql/try-advisory-locks.sql");

/**
 * The lock of advisory-lock.sql for many keys of one namespace, on a plain connection inside a
 * transaction (statements.ts), in one statement and a deadlock-free order.
 */
export async function lockAllOn(client: pg.PoolClient, namespace: string, keys: string[]): Promise<void> {
  await runStatement(client, ADVISORY_LOCKS, [namespace, keys]);
}

/**
 * A Prisma interactive transaction that holds `namespace`/`key` before `fn` runs: the
 * transaction a job's check runs in. The lock is taken on the transaction's own connection as
 * a prepared statement, or through `tx` where that connection cannot be told.
 */
export function lockedTransaction<T>(
  db: Db,
  namespace: string,
  key: string,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  return prismaTransaction(db, async (tx, client) => {
    await runStatementIn(client ?? tx, ADVISORY_LOCK, [namespace, key]);
    return fn(tx);
  });
}

/**
 * A lock tried in a transaction: a prepared statement on the transaction's own connection where
 * it can be told (statements.ts `runStatementIn`), else through `tx`.
 */
export async function tryLock(tx: Tx, namespace: string, key: string): Promise<boolean> {
  const rows = await runStatementIn<{ acquired: boolean }>(tx, TRY_ADVISORY_LOCK, [namespace, key]);
  return rows[0]?.acquired === true;
}

/** `tryLock` for many keys of one namespace at once; returns the keys acquired. */
export async function tryLockMany(tx: Tx, namespace: string, keys: string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = await runStatementIn<{ key: string; acquired: boolean }>(tx, TRY_ADVISORY_LOCKS, [
    namespace,
    JSON.stringify(keys),
  ]);
  return new Set(rows.filter((r) => r.acquired).map((r) => r.key));
}
