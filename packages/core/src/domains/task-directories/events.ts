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

/** A wake-up, now, of the item `itemId` of `companyId`. */
const wake = (companyId: string, itemId: string, now: Date): ItemWake => ({
  domain: DOMAIN,
  scope: companyId,
  itemId,
  reason: "item",
  dueAt: now,
});

/**
 * The wake-ups of the directories of each issue and of its ancestors, and of the workspaces of
 * each issue (ancestors.sql: one statement for all of them).
 */
async function wakesAround(db: Db | Tx, issues: IssueRef[], now: Date): Promise<ItemWake[]> {
  if (issues.length === 0) return [];
  const rows = await db.$queryRawUnsafe<{ company_id: string; kind: string; id: string }[]>(
    sqlFile(__dirname, "ancestors.sql"),
    JSON.stringify(issues),
  );
  const wakes = rows.map((r) => wake(r.company_id, r.kind === "issue" ? dirItem(r.id) : wsItem(r.id), now));
  const found = new Set(rows.filter((r) => r.kind === "issue").map((r) => `${r.company_id}/${r.id}`));
  for (const { companyId, issueId } of issues) {
    // The issue is gone: its directory may be an orphan now.
    if (!found.has(`${companyId}/${issueId}`)) wakes.push(wake(companyId, dirItem(issueId), now));
  }
  return wakes;
}

/** Wakes what `wakesAround` names, in one more statement. */
async function wakeAround(db: Db | Tx, issues: IssueRef[], now: Date): Promise<DeadlineRequest[]> {
  return wakeItems(db, await wakesAround(db, issues, now), now);
}

export const events: EventHandlers<TaskDirectoriesConfig> = {
  // Its own item; archived or cleanup_failed, also around its source issue: one wake-up statement.
  "workspace.changed": async (events, ctx) => {
    const own = events.map((event) => wake(event.companyId, wsItem(event.workspaceId), ctx.now));
    const closed = events.filter((e) => e.status === "archived" || e.status === "cleanup_failed");
    let around: ItemWake[] = [];
    if (closed.length > 0) {
      const asked = new Set(closed.map((e) => `${e.companyId}/${e.workspaceId}`));
      const rows = await ctx.db.executionWorkspace.findMany({
        where: { id: { in: [...new Set(closed.map((e) => e.workspaceId))] } },
        select: { id: true, companyId: true, sourceIssueId: true },
      });
      const issues = rows
        .filter((r) => r.sourceIssueId && asked.has(`${r.companyId}/${r.id}`))
        .map((r) => ({ companyId: r.companyId, issueId: r.sourceIssueId! }));
      around = await wakesAround(ctx.db, issues, ctx.now);
    }
    return wakeItems(ctx.db, [...own, ...around], ctx.now);
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
