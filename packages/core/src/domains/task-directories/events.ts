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

/** An issue of a company. */
interface IssueRef {
  companyId: string;
  issueId: string;
}

/**
 * Wakes the directories of each issue and of its ancestors, and the workspaces of each issue
 * (ancestors.sql: one statement for all of them, and one to record the wakes).
 */
export async function wakeAround(db: Db | Tx, issues: IssueRef[], now: Date): Promise<DeadlineRequest[]> {
  if (issues.length === 0) return [];
  const rows = await db.$queryRawUnsafe<{ company_id: string; kind: string; id: string }[]>(
    sqlFile(__dirname, "ancestors.sql"),
    JSON.stringify(issues),
  );
  const wake = (companyId: string, itemId: string): ItemWake => ({
    domain: DOMAIN,
    scope: companyId,
    itemId,
    reason: "item",
    dueAt: now,
  });
  const wakes = rows.map((r) => wake(r.company_id, r.kind === "issue" ? dirItem(r.id) : wsItem(r.id)));
  const found = new Set(rows.filter((r) => r.kind === "issue").map((r) => `${r.company_id}/${r.id}`));
  for (const { companyId, issueId } of issues) {
    // The issue is gone: its directory may be an orphan now.
    if (!found.has(`${companyId}/${issueId}`)) wakes.push(wake(companyId, dirItem(issueId)));
  }
  return wakeItems(db, wakes, now);
}

export const events: EventHandlers<TaskDirectoriesConfig> = {
  "workspace.changed": async (events, ctx) => {
    const own: ItemWake[] = events.map((event) => ({
      domain: DOMAIN,
      scope: event.companyId,
      itemId: wsItem(event.workspaceId),
      reason: "item",
      dueAt: ctx.now,
    }));
    const requests = await wakeItems(ctx.db, own, ctx.now);
    const closed = events.filter((e) => e.status === "archived" || e.status === "cleanup_failed");
    if (closed.length > 0) {
      const asked = new Set(closed.map((e) => `${e.companyId}/${e.workspaceId}`));
      const rows = await ctx.db.executionWorkspace.findMany({
        where: { id: { in: [...new Set(closed.map((e) => e.workspaceId))] } },
        select: { id: true, companyId: true, sourceIssueId: true },
      });
      const issues = rows
        .filter((r) => r.sourceIssueId && asked.has(`${r.companyId}/${r.id}`))
        .map((r) => ({ companyId: r.companyId, issueId: r.sourceIssueId! }));
      requests.push(...(await wakeAround(ctx.db, issues, ctx.now)));
    }
    return requests;
  },
  "issue.changed": (events, ctx) =>
    wakeAround(
      ctx.db,
      events
        .filter((e) => e.status === "done" || e.status === "cancelled")
        .map((e) => ({ companyId: e.companyId, issueId: e.issueId })),
      ctx.now,
    ),
  "issue.deleted": (events, ctx) =>
    wakeAround(
      ctx.db,
      events.map((e) => ({ companyId: e.companyId, issueId: e.issueId })),
      ctx.now,
    ),
};
