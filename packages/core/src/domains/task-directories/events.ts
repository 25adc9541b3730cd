/**
 * When task-directory work is due. Items (reclaim_item_deadlines) name what a company job
 * looks at: `ws:<workspace id>` (a task directory row) and `dir:<issue id>` (an issue
 * directory). At start-up the instance job walks every issue directory once (orphans.ts), and
 * every company with scheduled items gets its job at the earliest. After that only changes
 * point the reaper somewhere: a workspace row that changes (its own item; archived or
 * `cleanup_failed`: its issue's directory and its ancestors' too), an issue that becomes
 * `done` or `cancelled` (its directory and its ancestors', whose trees may just have closed,
 * and its workspaces). With nothing pending, nothing is scheduled.
 */
import type { Db, Tx } from "../../db";
import { sqlFile } from "../../db/sql";
import {
  INSTANCE_SCOPE,
  scopesWithItems,
  wakeItems,
  type DeadlineRequest,
  type DueItem,
  type ItemVerdict,
  type ItemWake,
} from "../../ledger";
import type { EventContext, EventHandlers } from "../types";
import type { TaskDirectoriesConfig } from "./config";

export const DOMAIN = "task-directories" as const;

export const wsItem = (workspaceId: string) => `ws:${workspaceId}`;
export const dirItem = (issueId: string) => `dir:${issueId}`;
export function itemOf(itemId: string): { kind: "ws" | "dir"; id: string } {
  return { kind: itemId.startsWith("ws:") ? "ws" : "dir", id: itemId.slice(itemId.indexOf(":") + 1) };
}

/** An item a batch judged and when it is due again (null: at its next change). */
export interface Settle {
  item: DueItem;
  dueAt: Date | null;
  reason: string;
}

/** The ledger's verdict for a settle (settleItems: one statement for a batch's items). */
export const verdictOf = (s: Settle): ItemVerdict => ({
  itemId: s.item.itemId,
  version: s.item.version,
  dueAt: s.dueAt,
  reason: s.reason,
});

export async function onStartup(ctx: EventContext<TaskDirectoriesConfig>): Promise<DeadlineRequest[]> {
  const companies = await scopesWithItems(ctx.db, DOMAIN);
  return [
    { domain: DOMAIN, scope: INSTANCE_SCOPE, reason: "startup", dueAt: ctx.now },
    ...companies.map((c) => ({ domain: DOMAIN, scope: c.scope, reason: "item", dueAt: c.dueAt })),
  ];
}

/** Wakes the directories of `issueId` and its ancestors, and the workspaces of `issueId`. */
export async function wakeAround(
  db: Db | Tx,
  companyId: string,
  issueId: string,
  now: Date,
): Promise<DeadlineRequest[]> {
  const rows = await db.$queryRawUnsafe<{ kind: string; id: string }[]>(
    sqlFile(__dirname, "ancestors.sql"),
    issueId,
    companyId,
  );
  const wakes: ItemWake[] = rows.map((r) => ({
    domain: DOMAIN,
    scope: companyId,
    itemId: r.kind === "issue" ? dirItem(r.id) : wsItem(r.id),
    reason: "item",
    dueAt: now,
  }));
  if (!rows.some((r) => r.kind === "issue" && r.id === issueId)) {
    // The issue is gone: its directory may be an orphan now.
    wakes.push({ domain: DOMAIN, scope: companyId, itemId: dirItem(issueId), reason: "item", dueAt: now });
  }
  return wakeItems(db, wakes, now);
}

export const events: EventHandlers<TaskDirectoriesConfig> = {
  "workspace.changed": async (event, ctx) => {
    const own: ItemWake = {
      domain: DOMAIN,
      scope: event.companyId,
      itemId: wsItem(event.workspaceId),
      reason: "item",
      dueAt: ctx.now,
    };
    const requests = await wakeItems(ctx.db, [own], ctx.now);
    if (event.status === "archived" || event.status === "cleanup_failed") {
      const row = await ctx.db.executionWorkspace.findFirst({
        where: { id: event.workspaceId, companyId: event.companyId },
        select: { sourceIssueId: true },
      });
      if (row?.sourceIssueId) {
        requests.push(...(await wakeAround(ctx.db, event.companyId, row.sourceIssueId, ctx.now)));
      }
    }
    return requests;
  },
  "issue.changed": async (event, ctx) =>
    event.status === "done" || event.status === "cancelled"
      ? wakeAround(ctx.db, event.companyId, event.issueId, ctx.now)
      : [],
  "issue.deleted": async (event, ctx) => wakeAround(ctx.db, event.companyId, event.issueId, ctx.now),
};
