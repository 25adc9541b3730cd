/**
 * When restore-point retention is due, besides the deadlines each batch computes:
 *  - at start-up: every company with due work now (rows the issues trigger marked while no
 *    scheduler listened, expiring rows a restart interrupted) or later (its earliest
 *    expiry, capture grace end or retry);
 *  - when issue changes settle while the company has live restore points: `issue.changed`
 *    events (and the trigger's notifications, wake-listener.ts) request a review
 *    `settleMs` after the first change (the ledger keeps the earliest request, so later
 *    changes never postpone it);
 *  - at once when an issue or a company is deleted (its rows were marked
 *    `delete_requested` by the trigger in the deleting transaction).
 * A company without live restore points gets nothing scheduled.
 */
import type { DeadlineRequest } from "../../ledger";
import type { EventContext, EventHandlers } from "../types";
import { LIMITS, type RestorePointRetentionConfig } from "./config";
import { companiesWithRestorePoints, startupDue } from "./queries";
import type { RestorePointStatus } from "../../restore-points/vocabulary";

export const DOMAIN = "restore-point-retention";

type Ctx = EventContext<RestorePointRetentionConfig>;

/** The reasons a wake-up can have (also the trigger's notification `reason`). */
export type WakeReason = "issue_changed" | "issue_deleted" | "company_deleted";

/** The deadline a wake-up requests: a settle window for issue changes, now for deletions. */
export function wakeRequest(
  companyId: string,
  reason: WakeReason,
  now: Date,
  settleMs: number,
): DeadlineRequest {
  const dueAt = reason === "issue_changed" ? new Date(now.getTime() + settleMs) : now;
  return { domain: DOMAIN, scope: companyId, reason, dueAt };
}

/** A wake-up for each event's company that has restore points in `statuses`. */
async function wakeCompanies(
  events: readonly { companyId: string }[],
  ctx: Ctx,
  reason: WakeReason,
  statuses: RestorePointStatus[],
): Promise<DeadlineRequest[]> {
  const found = await companiesWithRestorePoints(
    ctx.db,
    events.map((e) => e.companyId),
    statuses,
  );
  return [...found].map((companyId) => wakeRequest(companyId, reason, ctx.now, ctx.config.settleMs));
}

export async function onStartup(ctx: Ctx): Promise<DeadlineRequest[]> {
  const rows = await startupDue(ctx.db, LIMITS.captureGraceMs);
  return rows.map((row) =>
    row.due_at <= ctx.now
      ? { domain: DOMAIN, scope: row.company_id, reason: "startup", dueAt: ctx.now }
      : { domain: DOMAIN, scope: row.company_id, reason: "retention", dueAt: row.due_at },
  );
}

const LIVE: RestorePointStatus[] = ["active"];
const ANY_WORK: RestorePointStatus[] = ["pending", "active", "expiring", "superseded", "delete_requested"];

export const events: EventHandlers<RestorePointRetentionConfig> = {
  "issue.changed": (events, ctx) => wakeCompanies(events, ctx, "issue_changed", LIVE),
  "issue.deleted": (events, ctx) => wakeCompanies(events, ctx, "issue_deleted", ANY_WORK),
  "company.deleted": (events, ctx) => wakeCompanies(events, ctx, "company_deleted", ANY_WORK),
};
