/**
 * The deadline ledger (table reclaim_deadlines), Reclaim's source of truth for what is
 * scheduled: one row per domain, scope and reason with its due time. BullMQ holds at most
 * one pending job per (domain, scope) mirroring the earliest row (queue/deadline-queue.ts);
 * a Redis flush loses no deadline because the queue is rebuilt from here.
 *
 * Protocol:
 *  - `requestDeadlines` merges with LEAST and bumps `version` on every touch;
 *  - a job `claimDue`s the rows due when it starts (reason + version);
 *  - when it finishes, `settleJob` (settle.ts) deletes exactly those rows, unless they were
 *    touched again meanwhile (then they stay and the job runs again), and records the
 *    deadlines its check computed, in the statement that stores its report.
 */
import type pg from "pg";
import { poolOf, runStatement, runStatementIn, statement, type Db, type Queryable, type Tx } from "../db";
import type { Scope } from "./scope";

export interface DeadlineRequest {
  domain: string;
  scope: Scope;
  /** Why the work is due: "startup", "retention", "recheck", "retry", "continue", an event type... */
  reason: string;
  dueAt: Date;
}

export interface ClaimedDeadline {
  reason: string;
  version: bigint;
  dueAt: Date;
}

export interface LedgerKey {
  domain: string;
  scope: Scope;
}

export function keyOf(key: LedgerKey): string {
  return `${key.domain}/${key.scope}`;
}

/**
 * One entry per (domain, scope, reason), keeping the earliest due time, in key order: two
 * transactions that write overlapping rows then lock them in the same order.
 */
export function mergeRequests(requests: DeadlineRequest[]): DeadlineRequest[] {
  const merged = new Map<string, DeadlineRequest>();
  for (const request of requests) {
    const id = `${request.domain}\u0000${request.scope}\u0000${request.reason}`;
    const known = merged.get(id);
    if (!known || request.dueAt < known.dueAt) merged.set(id, request);
  }
  return [...merged.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
}

const REQUEST_DEADLINES = statement(__dirname, "request-deadlines.sql");

/** Records deadlines (request-deadlines.sql), on `on`: a client, its transaction or a connection. */
export async function requestDeadlines(
  on: Db | Tx | Queryable,
  requests: DeadlineRequest[],
  now: Date,
): Promise<void> {
  const merged = mergeRequests(requests);
  if (merged.length === 0) return;
  await runStatementIn(on, REQUEST_DEADLINES, [
    JSON.stringify(merged.map((r) => ({ ...r, dueAt: r.dueAt.toISOString() }))),
    now,
  ]);
}

const CLAIM_DUE = statement(__dirname, "claim-due.sql");

/** What a job starts from: the rows of its key that are due, and the key's cursors. */
export interface DueClaim {
  claimed: ClaimedDeadline[];
  /** Each walk's continuation cursor, by the walk's name (jobs/cursors.ts). */
  cursors: Map<string, string>;
}

/**
 * Claims the rows of `key` due at `now`, and reads the key's continuation cursors in the same
 * round trip (claim-due.sql): a batch's walks read them next.
 */
export async function claimDue(db: Db, key: LedgerKey, now: Date): Promise<DueClaim> {
  const rows = await runStatement<{
    reason: string | null;
    version: string | null;
    due_at: Date | null;
    cursor_name: string | null;
    cursor_value: string | null;
  }>(poolOf(db), CLAIM_DUE, [key.domain, key.scope, now]);
  const claim: DueClaim = { claimed: [], cursors: new Map() };
  for (const r of rows) {
    if (r.cursor_name !== null) claim.cursors.set(r.cursor_name, r.cursor_value!);
    else claim.claimed.push({ reason: r.reason!, version: BigInt(r.version!), dueAt: r.due_at! });
  }
  return claim;
}

const LOCK_AND_CLAIM = statement(__dirname, "lock-and-claim.sql");

/**
 * Takes `lock` (an advisory lock: namespace and key) and claims the rows of `key` due at
 * `now`, in one statement (lock-and-claim.sql), on the transaction's connection or its `tx`.
 */
export async function lockAndClaim(
  on: Queryable | Tx,
  lock: { namespace: string; key: string },
  key: LedgerKey,
  now: Date,
): Promise<ClaimedDeadline[]> {
  const rows = await runStatementIn<{ reason: string | null; version: string | null; due_at: Date | null }>(
    on,
    LOCK_AND_CLAIM,
    [lock.namespace, lock.key, key.domain, key.scope, now],
  );
  return rows.flatMap((r) =>
    r.reason === null ? [] : [{ reason: r.reason, version: BigInt(r.version!), dueAt: r.due_at! }],
  );
}

const EARLIEST_DUE = statement(__dirname, "earliest-due.sql");

/** The earliest deadline of each key that has rows, by `keyOf`. */
export async function earliestDueOf(
  client: pg.PoolClient | pg.Pool,
  keys: LedgerKey[],
): Promise<Map<string, Date>> {
  const rows = await runStatement<{ domain: string; scope: string; due_at: Date }>(client, EARLIEST_DUE, [
    keys.map((k) => k.domain),
    keys.map((k) => k.scope),
  ]);
  return new Map(rows.map((r) => [keyOf(r), r.due_at]));
}

/** Every (domain, scope) with its earliest deadline: what the queues must hold. */
export async function scheduledKeys(db: Db, domains?: string[]): Promise<(LedgerKey & { dueAt: Date })[]> {
  const rows = await db.reclaimDeadline.groupBy({
    by: ["domain", "companyId"],
    where: domains ? { domain: { in: domains } } : {},
    _min: { dueAt: true },
  });
  return rows.map((r) => ({ domain: r.domain, scope: r.companyId, dueAt: r._min.dueAt! }));
}

export async function listDeadlines(db: Db, domain?: string) {
  return db.reclaimDeadline.findMany({
    where: domain ? { domain } : {},
    orderBy: [{ dueAt: "asc" }, { domain: "asc" }, { companyId: "asc" }],
  });
}
