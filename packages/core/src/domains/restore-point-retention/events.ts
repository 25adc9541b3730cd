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
import type { Db, Tx } from "../../db";
import type { DeadlineRequest } from "../../ledger";
import type { EventContext, EventHandlers } from "../types";
import { LIMITS, type RestorePointRetentionConfig } from "./config";
import { startupDue } from "./queries";
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

async function hasRestorePoints(
  db: Db | Tx,
  companyId: string,
  statuses: RestorePointStatus[],
): Promise<boolean> {
  const row = await db.executionWorkspaceRestorePoint.findFirst({
    where: { companyId, status: { in: statuses } },
    select: { id: true },
  });
  return row !== null;
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
  "issue.changed": async (event, ctx) =>
    (await hasRestorePoints(ctx.db, event.companyId, LIVE))
      ? [wakeRequest(event.companyId, "issue_changed", ctx.now, ctx.config.settleMs)]
      : [],
  "issue.deleted": async (event, ctx) =>
    (await hasRestorePoints(ctx.db, event.companyId, ANY_WORK))
      ? [wakeRequest(event.companyId, "issue_deleted", ctx.now, ctx.config.settleMs)]
      : [],
  "company.deleted": async (event, ctx) =>
    (await hasRestorePoints(ctx.db, event.companyId, ANY_WORK))
      ? [wakeRequest(event.companyId, "company_deleted", ctx.now, ctx.config.settleMs)]
      : [],
};
