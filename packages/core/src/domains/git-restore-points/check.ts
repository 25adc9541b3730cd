/**
 * One batch of git cache expiration for a company.
 *
 * apply (the job's transaction, the company lock): the workspaces that are due
 *   (reclaim_item_deadlines; a requested sweep: the next page of the company's git
 *   workspaces), at most 8, are read with Paperclip's facts and judged (rules.ts). One that
 *   waits gets its skip reason and its next deadline here; one that expires, or whose removal
 *   is still to finish, is handed to `finish`.
 * finish (after commit): each is expired under its own locks and transaction (expire.ts), or
 *   its removal finished (finish.ts); its outcome is reported and logged, and its next
 *   deadline recorded. The company's next deadline is its earliest workspace deadline; a full
 *   batch continues at once.
 * A dry run (the control, or a requested diagnosis) judges, captures and reports, and
 *   changes nothing: no restore point, no removal, no workspace deadline.
 */
import { UUID_NAME } from "../../fs";
import { describeError } from "../../jobs/classify";
import type { Tx } from "../../db";
import { dueItems, nextItemDue, settleItem, settleItems, type DueItem, type ItemVerdict } from "../../ledger";
import { subjectFacts } from "../../workspaces";
import type { DomainId } from "../ids";
import type { JobContext } from "../types";
import { LIMITS, type GitRestorePointsConfig } from "./config";
import { DOMAIN } from "./events";
import { expireWorkspace, type ExpireContext, type ExpireResult } from "./expire";
import { resumeRemoval } from "./finish";
import { companyWorkspaces, gitWorkspaces } from "./queries";
import { judgeWorkspace, type Verdict } from "./rules";

type Ctx = JobContext<GitRestorePointsConfig>;

interface Work {
  item: DueItem | null;
  workspaceId: string;
  action: "expire" | "finish_removal";
}

export interface Applied {
  work: Work[];
  more: boolean;
}

const entryId = (workspaceId: string) => `workspace/${workspaceId}`;

export async function apply(ctx: Ctx, tx: Tx): Promise<Applied> {
  if (ctx.companyId === null) return { work: [], more: false };
  const companyId = ctx.companyId;
  let items: DueItem[];
  let more: boolean;
  if (ctx.kind === "sweep") {
    // A position this service wrote is a workspace id; any other (a forged token) starts over.
    const cursor = await ctx.readCursor("workspaces");
    const after = cursor !== null && UUID_NAME.test(cursor) ? cursor : null;
    const ids = await companyWorkspaces(tx, companyId, after, LIMITS.workspacesPerBatch);
    items = ids.map((itemId) => ({ itemId, reason: "sweep", dueAt: ctx.startedAt, version: -1n }));
    more = ids.length === LIMITS.workspacesPerBatch;
    await ctx.writeCursor("workspaces", more ? ids.at(-1)! : null, tx);
  } else {
    items = await dueItems(tx, DOMAIN, companyId, ctx.startedAt, LIMITS.workspacesPerBatch);
    more = items.length === LIMITS.workspacesPerBatch;
  }
  const rows = await gitWorkspaces(
    tx,
    companyId,
    items.map((i) => i.itemId),
  );
  const subjects = [...rows.values()]
    .filter((w) => w.source_issue_id !== null)
    .map((w) => ({ key: w.id, rootIssueId: w.source_issue_id!, workspaceIds: [w.id] }));
  const facts = await subjectFacts(tx, companyId, subjects, ctx.startedAt);
  const work: Work[] = [];
  const verdicts: ItemVerdict[] = [];
  for (const item of items) {
    ctx.report.examined();
    const row = rows.get(item.itemId);
    const verdict: Verdict = row
      ? judgeWorkspace({ workspace: row, facts: facts.get(row.id), config: ctx.config, now: ctx.startedAt })
      : { action: "forget" };
    if (verdict.action === "expire" || verdict.action === "finish_removal") {
      work.push({
        item: ctx.kind === "sweep" ? null : item,
        workspaceId: item.itemId,
        action: verdict.action,
      });
      continue;
    }
    if (verdict.action === "wait") ctx.report.skip(entryId(item.itemId), verdict.reason, { companyId });
    if (ctx.kind !== "sweep" && !ctx.dryRun) {
      verdicts.push(
        verdict.action === "wait"
          ? { ...item, dueAt: verdict.dueAt, reason: verdict.reason }
          : { ...item, dueAt: null, reason: "forget" },
      );
    }
  }
  await settleItems(tx, DOMAIN, verdicts, ctx.startedAt);
  if (more) ctx.continueNow();
  return { work, more };
}

export async function finish(ctx: Ctx, applied: Applied): Promise<void> {
  const companyId = ctx.companyId;
  if (companyId === null) return;
  const expireCtx: ExpireContext = {
    db: ctx.db,
    config: ctx.config,
    instanceRoot: ctx.instanceRoot,
    now: () => ctx.clock.now(),
    faults: ctx.faults,
    dryRun: ctx.dryRun,
    signal: ctx.signal,
    requestDeadlines: (requests) => {
      for (const r of requests) ctx.deadlines.at(r.reason, r.dueAt, r.scope, r.domain as DomainId);
    },
  };
  for (const w of applied.work) {
    if (ctx.signal.aborted) break;
    let result: ExpireResult;
    try {
      result =
        w.action === "expire"
          ? await expireWorkspace(expireCtx, companyId, w.workspaceId)
          : await resumeRemoval(expireCtx, companyId, w.workspaceId);
    } catch (error) {
      ctx.log.error("git cache expiration failed", {
        workspaceId: w.workspaceId,
        error: describeError(error),
      });
      ctx.report.failed(entryId(w.workspaceId), "expiration_failed", { companyId });
      result = {
        outcome: "skipped",
        reason: "expiration_failed",
        candidateBytes: 0,
        reclaimedBytes: 0,
        next: { dueAt: ctx.later(LIMITS.retryMs), reason: "retry" },
      };
      await settle(ctx, w, result);
      continue;
    }
    report(ctx, companyId, w.workspaceId, result);
    await settle(ctx, w, result);
  }
  if (ctx.kind === "deadline" && !ctx.dryRun) {
    const next = await nextItemDue(ctx.db, DOMAIN, companyId);
    if (next !== null) ctx.deadlines.at("workspace_due", next > ctx.startedAt ? next : ctx.startedAt);
  }
}

function report(ctx: Ctx, companyId: string, workspaceId: string, result: ExpireResult): void {
  const id = entryId(workspaceId);
  const extra = { companyId };
  switch (result.outcome) {
    case "removed":
      ctx.report.candidate(id, result.candidateBytes, { ...extra, reason: result.trigger ?? result.reason });
      ctx.report.removedEntry(id, result.reclaimedBytes, {
        ...extra,
        reason: result.trigger ?? result.reason,
      });
      break;
    case "dry_run":
      ctx.report.candidate(id, result.candidateBytes, { ...extra, reason: result.trigger ?? result.reason });
      break;
    case "rolled_back":
      ctx.report.rolledBack(id, result.reason!, extra);
      break;
    case "skipped":
      ctx.report.skip(id, result.reason!, extra);
      break;
    default:
      break;
  }
  if (result.outcome === "forget" || result.outcome === "finish_removal") return;
  ctx.log.info("git cache expiration", {
    event: "execution_workspace.git_cache_expiration",
    workspaceId,
    outcome: result.outcome,
    reason: result.reason ?? result.trigger ?? null,
    detail: result.detail,
    candidateBytes: result.candidateBytes,
    reclaimedBytes: result.reclaimedBytes,
  });
}

async function settle(ctx: Ctx, w: Work, result: ExpireResult): Promise<void> {
  if (w.item === null || ctx.dryRun) return;
  await settleItem(ctx.db, { domain: DOMAIN, ...w.item }, result.next, ctx.clock.now());
}
