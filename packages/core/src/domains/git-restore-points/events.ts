/**
 * When git cache expiration is due. Per workspace (reclaim_item_deadlines), so a workspace
 * that waits costs nothing until its own deadline or a change:
 *  - at start-up: every git worktree workspace not tracked yet (open, or closed with a removal
 *    to finish) is judged once; companies with tracked workspaces get their earliest deadline;
 *  - `issue.changed` (the issue, its old and new parent), `run.changed` of a run that ended (the
 *    run's issues; a run that is queued or starts only delays expiry) and
 *    `workspace.changed` wake the workspaces they concern: the issue's own workspace, and those
 *    whose source issue's tree contains it;
 *  - each judgement records the workspace's next deadline itself (check.ts): the terminal delay
 *    from the latest close, the idle deadline, 15 minutes after a failure or a busy lock, or
 *    none (wait for a change).
 */
import type { Db, Tx } from "../../db";
import { SETTLED_RUN_STATUSES } from "../../events/catalog";
import { scopesWithItems, wakeItems, type DeadlineRequest } from "../../ledger";
import type { EventContext, EventHandlers } from "../types";
import type { GitRestorePointsConfig } from "./config";
import { affectedWorkspaces, runIssues, untrackedWorkspaces, type CompanyRef } from "./queries";

export const DOMAIN = "git-restore-points";

type Ctx = EventContext<GitRestorePointsConfig>;

/** Wakes `workspaces` now, for `reason` (one statement). */
function wake(db: Db | Tx, workspaces: CompanyRef[], reason: string, now: Date): Promise<DeadlineRequest[]> {
  return wakeItems(
    db,
    workspaces.map((w) => ({ domain: DOMAIN, scope: w.companyId, itemId: w.id, reason, dueAt: now })),
    now,
  );
}

export async function onStartup(ctx: Ctx): Promise<DeadlineRequest[]> {
  const found = await untrackedWorkspaces(ctx.db, DOMAIN);
  const requests = await wakeItems(
    ctx.db,
    found.map((w) => ({
      domain: DOMAIN,
      scope: w.company_id,
      itemId: w.id,
      reason: "startup",
      dueAt: ctx.now,
    })),
    ctx.now,
  );
  for (const { scope, dueAt } of await scopesWithItems(ctx.db, DOMAIN)) {
    requests.push({ domain: DOMAIN, scope, reason: "workspace_due", dueAt });
  }
  return requests;
}

export const events: EventHandlers<GitRestorePointsConfig> = {
  "issue.changed": async (events, ctx) => {
    const issues = events.flatMap((event) =>
      [event.issueId, event.parentId, event.previousParentId]
        .filter((id): id is string => typeof id === "string")
        .map((id) => ({ companyId: event.companyId, id })),
    );
    return wake(ctx.db, await affectedWorkspaces(ctx.db, issues), "issue.changed", ctx.now);
  },
  "run.changed": async (events, ctx) => {
    // Only a run that ended can make a workspace expirable sooner (a live run keeps it, and
    // its end is the tree's latest touch). A run queued or started only delays expiry, and
    // every look reads the runs again, so it wakes nothing: nor does it read the company's
    // issues to find the run's (no index has their checkout or execution run).
    const ended = events
      .filter((event) => SETTLED_RUN_STATUSES.has(event.status))
      .map((event) => ({ companyId: event.companyId, id: event.runId }));
    if (ended.length === 0) return [];
    const issues = await runIssues(ctx.db, ended);
    return wake(ctx.db, await affectedWorkspaces(ctx.db, issues), "run.changed", ctx.now);
  },
  "workspace.changed": async (events, ctx) => {
    const named = events.map((event) => ({ companyId: event.companyId, id: event.workspaceId }));
    return wake(ctx.db, await affectedWorkspaces(ctx.db, [], named), "workspace.changed", ctx.now);
  },
};
