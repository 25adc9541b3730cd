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
 *    settles them (`settleItems`, one statement for a batch's items): the next due time (or
 *    NULL) is written only if the version is still the one it read. An item woken while the
 *    job judged it stays due, and runs again.
 *  - `nextItemDue` is the earliest scheduled item: the job requests the ledger deadline for it.
 */
import { runStatementIn, statement, type Db, type Tx } from "../db";
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

export interface ItemVerdict {
  itemId: string;
  /** The version the job read (DueItem.version). */
  version: bigint;
  /** Due again then; null: wait for an event. */
  dueAt: Date | null;
  reason: string;
}

const SETTLE_ITEMS = statement(__dirname, "settle-items.sql");

/**
 * The verdicts for items of `domain` the job read, in one statement however many: each is
 * written only where the item is still at the version the job read (a wake-up that came
 * meanwhile keeps the row due). An item given twice keeps its first verdict, as one settle
 * after another would (the first bumps the version the second expects). Returns the ids of
 * the items settled.
 */
export async function settleItems(
  db: Db | Tx,
  domain: string,
  verdicts: readonly ItemVerdict[],
  now: Date,
): Promise<Set<string>> {
  const first = new Map<string, ItemVerdict>();
  for (const v of verdicts) if (!first.has(v.itemId)) first.set(v.itemId, v);
  if (first.size === 0) return new Set();
  const rows = await runStatementIn<{ item_id: string }>(db, SETTLE_ITEMS, [
    domain,
    JSON.stringify(
      [...first.values()].map((v) => ({
        itemId: v.itemId,
        version: v.version.toString(),
        dueAt: v.dueAt?.toISOString() ?? null,
        reason: v.reason,
      })),
    ),
    now,
  ]);
  return new Set(rows.map((r) => r.item_id));
}

/** One item's verdict (settleItems); false when a wake-up came meanwhile (the row stays due). */
export async function settleItem(
  db: Db | Tx,
  item: { domain: string; itemId: string; version: bigint },
  next: { dueAt: Date | null; reason: string },
  now: Date,
): Promise<boolean> {
  const settled = await settleItems(
    db,
    item.domain,
    [{ ...item, dueAt: next.dueAt, reason: next.reason }],
    now,
  );
  return settled.size === 1;
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
