/**
 * The deadline ledger (table reclaim_deadlines), Reclaim's source of truth for what is
 * scheduled: one row per domain, scope and reason with its due time. BullMQ holds at most
 * one pending job per (domain, scope) mirroring the earliest row (queue/deadline-queue.ts);
 * a Redis flush loses no deadline because the queue is rebuilt from here.
 *
 * Protocol:
 *  - `requestDeadlines` merges with LEAST and bumps `version` on every touch;
 *  - a job `claimDue`s the rows due when it starts (reason + version);
 *  - when it finishes, `consumeClaimed` deletes exactly those rows, unless they were touched
 *    again meanwhile (then they stay and the job runs again), and the job records the
 *    deadlines its check computed.
 */
import type { Db, Tx } from "../db";
import { sqlFile } from "../db/sql";
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

/** One entry per (domain, scope, reason), keeping the earliest due time. */
export function mergeRequests(requests: DeadlineRequest[]): DeadlineRequest[] {
  const merged = new Map<string, DeadlineRequest>();
  for (const request of requests) {
    const id = `${request.domain}\u0000${request.scope}\u0000${request.reason}`;
    const known = merged.get(id);
    if (!known || request.dueAt < known.dueAt) merged.set(id, request);
  }
  return [...merged.values()];
}

export async function requestDeadlines(db: Db | Tx, requests: DeadlineRequest[], now: Date): Promise<void> {
  const merged = mergeRequests(requests);
  if (merged.length === 0) return;
  await db.$executeRawUnsafe(
    sqlFile(__dirname, "request-deadlines.sql"),
    JSON.stringify(merged.map((r) => ({ ...r, dueAt: r.dueAt.toISOString() }))),
    now,
  );
}

export async function claimDue(db: Db | Tx, key: LedgerKey, now: Date): Promise<ClaimedDeadline[]> {
  const rows = await db.reclaimDeadline.findMany({
    where: { domain: key.domain, companyId: key.scope, dueAt: { lte: now } },
    select: { reason: true, version: true, dueAt: true },
  });
  return rows;
}

export async function consumeClaimed(tx: Tx, key: LedgerKey, claimed: ClaimedDeadline[]): Promise<void> {
  if (claimed.length === 0) return;
  await tx.reclaimDeadline.deleteMany({
    where: {
      domain: key.domain,
      companyId: key.scope,
      OR: claimed.map((c) => ({ reason: c.reason, version: c.version })),
    },
  });
}

export async function earliestDue(db: Db | Tx, key: LedgerKey): Promise<Date | null> {
  const row = await db.reclaimDeadline.aggregate({
    where: { domain: key.domain, companyId: key.scope },
    _min: { dueAt: true },
  });
  return row._min.dueAt;
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
