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
import { affectedWorkspaces, runIssues, untrackedWorkspaces } from "./queries";

export const DOMAIN = "git-restore-points";

type Ctx = EventContext<GitRestorePointsConfig>;

async function wake(
  db: Db | Tx,
  companyId: string,
  ids: string[],
  reason: string,
  now: Date,
): Promise<DeadlineRequest[]> {
  return wakeItems(
    db,
    ids.map((itemId) => ({ domain: DOMAIN, scope: companyId, itemId, reason, dueAt: now })),
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
  "issue.changed": async (event, ctx) => {
    const issues = [event.issueId, event.parentId, event.previousParentId].filter(
      (id): id is string => typeof id === "string",
    );
    const ids = await affectedWorkspaces(ctx.db, event.companyId, issues);
    return wake(ctx.db, event.companyId, ids, "issue.changed", ctx.now);
  },
  "run.changed": async (event, ctx) => {
    // Only a run that ended can make a workspace expirable sooner (a live run keeps it, and
    // its end is the tree's latest touch). A run queued or started only delays expiry, and
    // every look reads the runs again, so it wakes nothing: nor does it read the company's
    // issues to find the run's (no index has their checkout or execution run).
    if (!SETTLED_RUN_STATUSES.has(event.status)) return [];
    const ids = await affectedWorkspaces(
      ctx.db,
      event.companyId,
      await runIssues(ctx.db, event.companyId, event.runId),
    );
    return wake(ctx.db, event.companyId, ids, "run.changed", ctx.now);
  },
  "workspace.changed": async (event, ctx) => {
    const ids = await affectedWorkspaces(ctx.db, event.companyId, [], [event.workspaceId]);
    return wake(ctx.db, event.companyId, ids, "workspace.changed", ctx.now);
  },
};
