/**
 * Per-item deadlines (table reclaim_item_deadlines): for domains that judge items one by one
 * (a git workspace, a task directory), which items of a company are due and when. The
 * ledger (deadlines.ts) still decides when the company's job runs; this table decides what
 * that job looks at, so a kept item costs nothing until its own deadline or a change.
 *
 * Protocol:
 *  - `wakeItems` (events, discovery) merges with LEAST (a later time never postpones an
 *    earlier one; a NULL due time is "nothing scheduled") and bumps `version`; it returns the
 *    ledger requests the caller records so the company's job runs then;
 *  - a job reads `dueItems` (due_at <= now) with their versions, judges them, and
 *    `settleItem`s each: the next due time (or NULL) is written only if the version is still
 *    the one it read. An item woken while the job judged it stays due, and runs again.
 *  - `nextItemDue` is the earliest scheduled item: the job requests the ledger deadline for it.
 */
import type { Db, Tx } from "../db";
import { sqlFile } from "../db/sql";
import type { DeadlineRequest } from "./deadlines";
import type { Scope } from "./scope";

export interface ItemWake {
  domain: string;
  scope: Scope;
  itemId: string;
  reason: string;
  dueAt: Date;
}

export interface DueItem {
  itemId: string;
  reason: string;
  dueAt: Date;
  version: bigint;
}

/** Records the wake-ups; returns the ledger requests (one per domain, scope and reason). */
export async function wakeItems(db: Db | Tx, wakes: ItemWake[], now: Date): Promise<DeadlineRequest[]> {
  if (wakes.length === 0) return [];
  const earliest = new Map<string, ItemWake>();
  for (const wake of wakes) {
    const id = `${wake.domain}\u0000${wake.itemId}`;
    const known = earliest.get(id);
    if (!known || wake.dueAt < known.dueAt) earliest.set(id, wake);
  }
  const merged = [...earliest.values()];
  await db.$executeRawUnsafe(
    sqlFile(__dirname, "wake-items.sql"),
    JSON.stringify(merged.map((w) => ({ ...w, dueAt: w.dueAt.toISOString() }))),
    now,
  );
  return merged.map((w) => ({ domain: w.domain, scope: w.scope, reason: w.reason, dueAt: w.dueAt }));
}

/** Items of `domain` and `scope` due at `now`, earliest first. */
export async function dueItems(
  db: Db | Tx,
  domain: string,
  scope: Scope,
  now: Date,
  limit: number,
): Promise<DueItem[]> {
  const rows = await db.reclaimItemDeadline.findMany({
    where: { domain, companyId: scope, dueAt: { lte: now } },
    orderBy: [{ dueAt: "asc" }, { itemId: "asc" }],
    take: limit,
    select: { itemId: true, reason: true, dueAt: true, version: true },
  });
  return rows.map((r) => ({ itemId: r.itemId, reason: r.reason, dueAt: r.dueAt!, version: r.version }));
}

/**
 * The verdict for an item the job read at `version`: due again at `dueAt` (NULL: wait for an
 * event), for `reason`. Returns false when a wake-up came meanwhile (the row stays due).
 */
export async function settleItem(
  db: Db | Tx,
  item: { domain: string; itemId: string; version: bigint },
  next: { dueAt: Date | null; reason: string },
  now: Date,
): Promise<boolean> {
  const changed = await db.reclaimItemDeadline.updateMany({
    where: { domain: item.domain, itemId: item.itemId, version: item.version },
    data: { dueAt: next.dueAt, reason: next.reason, version: { increment: 1 }, updatedAt: now },
  });
  return changed.count === 1;
}

/** Forgets items that no longer exist (a workspace row deleted). */
export async function forgetItems(db: Db | Tx, domain: string, itemIds: string[]): Promise<void> {
  if (itemIds.length === 0) return;
  await db.reclaimItemDeadline.deleteMany({ where: { domain, itemId: { in: itemIds } } });
}

/** The earliest scheduled item of `domain` and `scope`, or null when none is scheduled. */
export async function nextItemDue(db: Db | Tx, domain: string, scope: Scope): Promise<Date | null> {
  const row = await db.reclaimItemDeadline.aggregate({
    where: { domain, companyId: scope, dueAt: { not: null } },
    _min: { dueAt: true },
  });
  return row._min.dueAt;
}

/** Scopes with scheduled items of `domain`, each with its earliest due time (start-up). */
export async function scopesWithItems(db: Db | Tx, domain: string): Promise<{ scope: Scope; dueAt: Date }[]> {
  const rows = await db.reclaimItemDeadline.groupBy({
    by: ["companyId"],
    where: { domain, dueAt: { not: null } },
    _min: { dueAt: true },
  });
  return rows.map((r) => ({ scope: r.companyId, dueAt: r._min.dueAt! }));
}
