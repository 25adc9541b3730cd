/**
 * One batch of task-directory retention for a company (the instance job walks for orphans:
 * orphans.ts).
 *
 * prepare (no lock): the company's due items (reclaim_item_deadlines: `ws:<workspace>` for a
 *   task directory row, `dir:<issue>` for an issue directory); one query for the rows, one for
 *   the workspace facts, one for what else points into the directories; judge each (rules.ts);
 *   for up to 8 to save, plan the tree against the limits and capture it (capture.ts: seal,
 *   upload, read back, decode once). A dry run reports the candidate and its bytes.
 * apply (the job's transaction): for each capture, take the issue's source lock and the
 *   workspace lifecycle lock without waiting (busy: keep, retry in an hour), read and judge
 *   again under them, then activate the restore point and archive the row in this same
 *   transaction (removal.ts). Settle every item judged: its next deadline, or none; an
 *   archived one stays due until its removal is done, so a crash in finish loses nothing.
 * finish (after commit): remove what was archived now or earlier (removal.ts), settle those
 *   items (done, or an hour later), and ask for the company's job at its earliest item.
 */
import {
  INSTANCE_SCOPE,
  dueItems,
  forgetItems,
  nextItemDue,
  settleItem,
  settleItems,
  type DeadlineRequest,
  type DueItem,
} from "../../ledger";
import type { Tx } from "../../db";
import { storageFor } from "../../storage";
import { isClosedWorkspaceStatus, workspaceRows, type WorkspaceRow } from "../../workspaces";
import type { JobContext } from "../types";
import { captureDirectory, dropRestorePoint, restorePointKey } from "./capture";
import { LIMITS, type TaskDirectoriesConfig } from "./config";
import { DOMAIN, itemOf, verdictOf, type Settle } from "./events";
import {
  deleteRetiredOrphans,
  judgeDirectories,
  type DirectoryWork,
  type RetiredOrphan,
} from "./directories";
import { finishRemoval, retentionStateOf, type PendingRemoval } from "./removal";
import { isTaskDirectoryRow } from "./rules";
import { planDirectory, provenTask, taskDirectory } from "./survey";
import { prepareOrphanWalk, type OrphanWalk } from "./orphans";
import { archiveUnderLocks, nextGeneration, type Candidate as ArchiveCandidate } from "./archive";
import { judgeRows } from "./judge";
import { BatchBytes, cleanupLog, directoryBytes, retentionLog } from "./logs";

type Ctx = JobContext<TaskDirectoriesConfig>;

interface Candidate extends ArchiveCandidate {
  item: DueItem;
  bytes: number;
}

/** A removal to do or finish after commit, with the workspace's item (settled when it is done). */
interface Removal extends PendingRemoval {
  item: DueItem;
}

export interface Prepared {
  settle: Settle[];
  forget: string[];
  candidates: Candidate[];
  removals: Removal[];
  directories: DirectoryWork | null;
  walk: OrphanWalk | null;
  /** The directory bytes this batch measured (logs.ts BatchBytes). */
  sizes: BatchBytes;
}

export interface Applied {
  removals: Removal[];
  orphans: RetiredOrphan[];
}

const entryId = (companyId: string, issueId: string) => `isolated-workspaces/${companyId}/${issueId}`;

export async function prepare(ctx: Ctx): Promise<Prepared> {
  const prepared: Prepared = {
    settle: [],
    forget: [],
    candidates: [],
    removals: [],
    directories: null,
    walk: null,
    sizes: new BatchBytes(ctx.instanceRoot),
  };
  if (ctx.scope === INSTANCE_SCOPE) {
    prepared.walk = await prepareOrphanWalk(ctx);
    return prepared;
  }
  const companyId = ctx.scope;
  const due = await dueItems(ctx.db, DOMAIN, companyId, ctx.startedAt, LIMITS.itemsPerBatch);
  const byWorkspace = new Map(
    due.filter((d) => itemOf(d.itemId).kind === "ws").map((d) => [itemOf(d.itemId).id, d]),
  );
  const rows = await workspaceRows(ctx.db, companyId, [...byWorkspace.keys()]);
  const open: WorkspaceRow[] = [];
  for (const [id, item] of byWorkspace) {
    const row = rows.get(id);
    const path = row?.source_issue_id
      ? taskDirectory(ctx.instanceRoot, companyId, row.source_issue_id)
      : null;
    if (!row || !isTaskDirectoryRow(row, path)) {
      prepared.forget.push(item.itemId);
      continue;
    }
    const state = retentionStateOf(row.metadata);
    if (isClosedWorkspaceStatus(row.status) && state) {
      // Archived by this domain: the removal is finished here (after a crash, or a busy lock).
      if (state.state !== "removed" && !ctx.dryRun) {
        prepared.removals.push({
          item,
          companyId,
          workspaceId: id,
          sourceIssueId: row.source_issue_id!,
          state,
        });
        prepared.settle.push({ item, dueAt: ctx.startedAt, reason: "removing" });
      } else {
        prepared.settle.push({ item, dueAt: null, reason: "closed" });
      }
      continue;
    }
    // Open, or closed by someone else while its issue may still be bound to it (the orphan
    // walk's closed-but-bound directory): judged alike, saved on that row and removed.
    open.push(row);
  }
  const verdicts = await judgeRows(ctx, ctx.db, companyId, open);
  const storage = storageFor(ctx.config.storage);
  let key: Awaited<ReturnType<typeof restorePointKey>> | null = null;
  for (const row of open) {
    const item = byWorkspace.get(row.id)!;
    const id = entryId(companyId, row.source_issue_id!);
    const verdict = verdicts.get(row.id)!;
    ctx.report.examined();
    if (!verdict.save) {
      await keep(ctx, prepared.sizes, id, row, verdict.reason, verdict.detail);
      prepared.settle.push({ item, dueAt: verdict.recheckAt, reason: verdict.reason });
      continue;
    }
    // At most 8 saves per sweep; skipped workspaces above did not use up the limit.
    if (ctx.signal.aborted || prepared.candidates.length >= LIMITS.savesPerSweep) {
      ctx.continueNow();
      continue;
    }
    const path = taskDirectory(ctx.instanceRoot, companyId, row.source_issue_id!);
    const planned = await planDirectory(await provenTask(ctx.instanceRoot, path), ctx.signal);
    if ("refused" in planned) {
      await keep(ctx, prepared.sizes, id, row, planned.refused);
      prepared.settle.push({ item, dueAt: null, reason: planned.refused });
      continue;
    }
    prepared.sizes.note(path, planned.bytes);
    if (ctx.dryRun) {
      ctx.report.candidate(id, planned.bytes, { companyId });
      retentionLog(ctx, row, "dry_run", null, planned.bytes, 0);
      if (isClosedWorkspaceStatus(row.status)) {
        cleanupLog(ctx, companyId, row.source_issue_id!, "dry_run", null, planned.bytes);
      }
      prepared.settle.push({ item, dueAt: null, reason: "dry_run" });
      continue;
    }
    key ??= await restorePointKey(ctx.config, storage);
    if (key === "refused") {
      await keep(ctx, prepared.sizes, id, row, "restore_points_refused");
      prepared.settle.push({ item, dueAt: null, reason: "restore_points_refused" });
      continue;
    }
    const result = await captureDirectory(
      ctx.db,
      storage,
      key,
      {
        companyId,
        workspaceId: row.id,
        sourceIssueId: row.source_issue_id!,
        generation: nextGeneration(row),
        plan: planned.plan,
        now: ctx.startedAt,
      },
      ctx.faults,
      (requests) => schedule(ctx, requests),
      ctx.signal,
    );
    await ctx.faults.hit("task-directories.captured");
    if (!result.ok) {
      if (result.restorePointId) {
        schedule(ctx, await dropRestorePoint(ctx.db, companyId, result.restorePointId, ctx.startedAt));
      }
      await keep(ctx, prepared.sizes, id, row, result.reason);
      const retry = result.reason === "storage_unavailable" || result.reason === "task_directory_changed";
      prepared.settle.push({
        item,
        dueAt: retry ? ctx.later(LIMITS.busyRetryMs) : null,
        reason: result.reason,
      });
      continue;
    }
    prepared.candidates.push({ item, row, path, captured: result.captured, bytes: planned.bytes });
  }
  // After the workspaces: a directory one of them planned or measured is not walked again.
  prepared.directories = await judgeDirectories(
    ctx,
    companyId,
    due.filter((d) => itemOf(d.itemId).kind === "dir"),
    new Set(byWorkspace.keys()),
    prepared.sizes,
  );
  return prepared;
}

/** Deadlines of other domains (restore-point retention's) this batch asks for. */
function schedule(ctx: Ctx, requests: DeadlineRequest[]): void {
  for (const d of requests) ctx.deadlines.at(d.reason, d.dueAt, d.scope, d.domain as typeof DOMAIN);
}

async function keep(
  ctx: Ctx,
  sizes: BatchBytes,
  id: string,
  row: WorkspaceRow,
  reason: string,
  detail?: string[],
) {
  ctx.report.skip(id, reason, { companyId: row.company_id });
  retentionLog(ctx, row, "skipped", reason, 0, 0, detail);
  if (isClosedWorkspaceStatus(row.status)) {
    // A closed row its issue is still bound to: the walk's directory, kept.
    const dir = taskDirectory(ctx.instanceRoot, row.company_id, row.source_issue_id!);
    cleanupLog(ctx, row.company_id, row.source_issue_id!, "skipped", reason, await sizes.of(dir));
  }
}

export async function apply(ctx: Ctx, tx: Tx, prepared: Prepared): Promise<Applied> {
  if (prepared.walk) return prepared.walk.apply(tx);
  const removals = [...prepared.removals];
  for (const c of prepared.candidates) {
    const id = entryId(c.row.company_id, c.row.source_issue_id!);
    const archived = await archiveUnderLocks(ctx, tx, c);
    if ("kept" in archived) {
      schedule(ctx, await dropRestorePoint(tx, c.row.company_id, c.captured.restorePointId, ctx.startedAt));
      await keep(ctx, prepared.sizes, id, c.row, archived.kept);
      const retry = archived.kept === "lock_busy" || archived.kept === "live_or_unresolved_consumer";
      prepared.settle.push({
        item: c.item,
        dueAt: retry ? ctx.later(LIMITS.busyRetryMs) : null,
        reason: archived.kept,
      });
      continue;
    }
    ctx.report.candidate(id, c.bytes, { companyId: c.row.company_id });
    removals.push({
      item: c.item,
      companyId: c.row.company_id,
      workspaceId: c.row.id,
      sourceIssueId: c.row.source_issue_id!,
      state: archived.state,
      preserved: isClosedWorkspaceStatus(c.row.status),
    });
    // Due until finish has removed the directory: a crash before that leaves it due, so the
    // retried job (or the next one) finishes the removal.
    prepared.settle.push({ item: c.item, dueAt: ctx.startedAt, reason: "removing" });
  }
  await forgetItems(tx, DOMAIN, prepared.forget);
  await settleItems(tx, DOMAIN, prepared.settle.map(verdictOf), ctx.startedAt);
  const orphans = prepared.directories ? await prepared.directories.apply(tx) : [];
  return { removals, orphans };
}

export async function finish(ctx: Ctx, applied: Applied): Promise<void> {
  await deleteRetiredOrphans(ctx, applied.orphans);
  for (const item of applied.removals) {
    const id = entryId(item.companyId, item.sourceIssueId);
    const row = { id: item.workspaceId, company_id: item.companyId, source_issue_id: item.sourceIssueId };
    const result = await finishRemoval(
      {
        db: ctx.db,
        instanceRoot: ctx.instanceRoot,
        now: ctx.startedAt,
        deadlines: (requests) => schedule(ctx, requests),
        hit: (point) => ctx.faults.hit(point),
      },
      item,
    );
    if (result.outcome === "removed") {
      ctx.report.removedEntry(id, result.bytes, { companyId: item.companyId });
      retentionLog(ctx, row, "removed", null, result.bytes, result.bytes);
      if (item.preserved) {
        cleanupLog(ctx, item.companyId, item.sourceIssueId, "preserved_and_removed", null, result.bytes);
      }
    } else if (result.outcome !== "kept" || result.reason !== "already_removed") {
      if (result.outcome === "kept") ctx.report.skip(id, result.reason, { companyId: item.companyId });
      else ctx.report.failed(id, result.reason, { companyId: item.companyId });
      retentionLog(ctx, row, "skipped", result.reason, 0, 0);
      if (item.preserved) {
        const bytes = await directoryBytes(ctx.instanceRoot, item.state.path);
        cleanupLog(ctx, item.companyId, item.sourceIssueId, "skipped", result.reason, bytes);
      }
    }
    // Done, or tried again in an hour (a busy lock, a failed rename or delete). A wake since
    // apply left the item due: the next job looks at it.
    const retry = result.outcome === "failed" || (result.outcome === "kept" && result.retry);
    await settleItem(
      ctx.db,
      { domain: DOMAIN, itemId: item.item.itemId, version: item.item.version + 1n },
      {
        dueAt: retry ? ctx.later(LIMITS.busyRetryMs) : null,
        reason: retry ? "removal_retry" : result.outcome,
      },
      ctx.startedAt,
    );
    // After a removal's last record (only jobs that removed a workspace's directory get here:
    // the start-up walk, run by every worker as it starts, never does).
    await ctx.faults.hit("task-directories.finished");
  }
  if (ctx.scope !== INSTANCE_SCOPE) {
    // The company's job is due again at its earliest item: one this batch kept, one it did
    // not reach (more than a batch was due), or one another batch scheduled. The ledger row
    // that made this job due is consumed, so without this a later item would wait for a change.
    const next = await nextItemDue(ctx.db, DOMAIN, ctx.scope);
    if (next) ctx.deadlines.at("item", next);
  }
}
