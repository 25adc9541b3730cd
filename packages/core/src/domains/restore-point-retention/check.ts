/**
 * One batch of restore-point retention for a company.
 *
 * apply (the job's transaction, company lock): lock up to 50 rows of due work (due-work.sql)
 *   and judge them: reviews by their source tree (rules.ts; one tree query for the batch),
 *   abandoned captures, expiry hooks to (re)run, objects to delete. Reviews are written
 *   here: delete_after cleared or set to the expiry time; an expired row moves to
 *   `expiring`; a row whose source issue is gone, or an abandoned capture, to
 *   `delete_requested`.
 * finish (after commit, no transaction): run the expiry hook of every `expiring` row and
 *   delete the objects of `superseded` / `delete_requested` rows; then one more locked
 *   transaction records the outcomes: hook done -> `delete_requested`; object confirmed gone
 *   -> `deleted`; a failure -> `last_error` and `retry_at` = now + 15 minutes. An `expiring`
 *   row's object is never deleted: only a row that has left `expiring` is deleted, in a
 *   later batch. The same transaction reads when work is next due and requests it:
 *   "continue" (due now, e.g. a full batch), "retention" (an expiry), "capture_grace" (a
 *   pending row's grace ends), "retry" (a failed hook or deletion).
 * A dry run judges and reports, changes nothing, calls nothing and schedules nothing.
 */
import { deleteSealed, StorageKey } from "@reclaim/shared";
import { describeError } from "../../jobs/classify";
import type { Tx } from "../../db";
import type { JobContext } from "../types";
import { LIMITS, type RestorePointRetentionConfig } from "./config";
import { runExpiryHook } from "./hook";
import {
  dueWork,
  nextDue,
  recordFailures,
  setDeleteAfter,
  transition,
  treeStates,
  type DueWindow,
} from "./queries";
import { reviewRestorePoint, type DueRow } from "./rules";
import { storageFor } from "../../restore-points";

type Ctx = JobContext<RestorePointRetentionConfig>;

/** What a run changed, logged when anything did ("Each run that changes anything logs its counts"). */
export interface Counts {
  reviewed: number;
  cleared: number;
  scheduled: number;
  expired: number;
  sourceGone: number;
  abandoned: number;
  hooksRun: number;
  hooksFailed: number;
  deletionRequested: number;
  deleted: number;
  deletesFailed: number;
}

export interface Applied {
  /** `expiring` rows whose hook runs now. */
  hooks: DueRow[];
  /** `superseded` / `delete_requested` rows whose object is deleted now. */
  deletions: DueRow[];
  counts: Counts;
  /** Due rows this batch locked: 0 when every due row was locked by another transaction. */
  locked: number;
}

const entryId = (row: Pick<DueRow, "id">) => `restore-point/${row.id}`;
const bytesOf = (row: DueRow) => Number(row.byte_size ?? 0);

function windowOf(ctx: Ctx): DueWindow {
  return { now: ctx.startedAt, pendingBefore: ctx.later(-LIMITS.captureGraceMs) };
}

function emptyCounts(): Counts {
  return {
    reviewed: 0,
    cleared: 0,
    scheduled: 0,
    expired: 0,
    sourceGone: 0,
    abandoned: 0,
    hooksRun: 0,
    hooksFailed: 0,
    deletionRequested: 0,
    deleted: 0,
    deletesFailed: 0,
  };
}

export async function apply(ctx: Ctx, tx: Tx): Promise<Applied> {
  const counts = emptyCounts();
  // Every restore point belongs to a company; the instance scope has nothing to do.
  if (ctx.companyId === null) return { hooks: [], deletions: [], counts, locked: 0 };
  const window = windowOf(ctx);
  const rows = await dueWork(tx, ctx.companyId, window, LIMITS.batch);
  const trees = await treeStates(
    tx,
    ctx.companyId,
    rows.filter((r) => r.work === "review").map((r) => r.source_issue_id),
  );
  // The rows are locked and their trees read; nothing is written yet. An issue change that
  // commits from here on must wait for this transaction and mark its rows due again
  // (the issues trigger locks them), or this review's verdict would hide it.
  await ctx.faults.hit("restore-point-retention.after-tree-read");
  const judge = { now: ctx.startedAt, retentionMs: ctx.config.retentionMs };

  const deleteAfter: { id: string; deleteAfter: Date | null }[] = [];
  const toExpire: DueRow[] = [];
  const toDelete: DueRow[] = [];
  const hooks: DueRow[] = [];
  const deletions: DueRow[] = [];

  for (const row of rows) {
    ctx.report.examined();
    const extra = { companyId: row.company_id };
    switch (row.work) {
      case "review": {
        counts.reviewed += 1;
        const review = reviewRestorePoint(row, trees.get(row.source_issue_id), judge);
        if (review.action === "clear") {
          ctx.report.skip(entryId(row), review.reason, extra);
          deleteAfter.push({ id: row.id, deleteAfter: null });
        } else if (review.action === "schedule") {
          ctx.report.skip(entryId(row), review.reason, extra);
          deleteAfter.push({ id: row.id, deleteAfter: review.at });
        } else if (review.action === "expire") {
          ctx.report.candidate(entryId(row), bytesOf(row), { ...extra, reason: review.because });
          toExpire.push(row);
        } else {
          ctx.report.candidate(entryId(row), bytesOf(row), { ...extra, reason: review.because });
          toDelete.push(row);
        }
        break;
      }
      case "abandoned":
        ctx.report.candidate(entryId(row), bytesOf(row), { ...extra, reason: "abandoned_capture" });
        toDelete.push(row);
        break;
      case "hook":
        ctx.report.candidate(entryId(row), bytesOf(row), { ...extra, reason: "expiry_hook_pending" });
        hooks.push(row);
        break;
      case "delete":
        ctx.report.candidate(entryId(row), bytesOf(row), { ...extra, reason: row.status });
        deletions.push(row);
        break;
    }
  }
  if (ctx.dryRun) return { hooks: [], deletions: [], counts: emptyCounts(), locked: rows.length };

  const now = ctx.startedAt;
  const written = new Set(await setDeleteAfter(tx, deleteAfter, now));
  for (const u of deleteAfter) {
    if (!written.has(u.id)) continue;
    if (u.deleteAfter === null) counts.cleared += 1;
    else counts.scheduled += 1;
  }
  const expiring = new Set(
    await transition(
      tx,
      toExpire.map((r) => r.id),
      ["active"],
      "expiring",
      now,
    ),
  );
  counts.expired = expiring.size;
  const requested = new Set(
    await transition(
      tx,
      toDelete.map((r) => r.id),
      ["active", "pending"],
      "delete_requested",
      now,
    ),
  );
  for (const row of toDelete) {
    if (!requested.has(row.id)) continue;
    if (row.work === "abandoned") counts.abandoned += 1;
    else counts.sourceGone += 1;
  }
  counts.deletionRequested = requested.size;
  hooks.push(...toExpire.filter((r) => expiring.has(r.id)));
  return { hooks, deletions, counts, locked: rows.length };
}

interface Outcomes {
  hooked: string[];
  hookFailures: { id: string; error: string }[];
  deleted: DueRow[];
  deleteFailures: { id: string; error: string }[];
}

async function runHooks(ctx: Ctx, rows: DueRow[], out: Outcomes): Promise<void> {
  for (const row of rows) {
    if (ctx.signal.aborted) return; // left `expiring`: due again, a later batch runs its hook
    await ctx.faults.hit("restore-point-retention.before-hook");
    try {
      await runExpiryHook(ctx.config.expiryHook, row, ctx.signal);
      out.hooked.push(row.id);
    } catch (error) {
      out.hookFailures.push({ id: row.id, error: `expiry hook failed: ${describeError(error)}` });
      ctx.report.failed(entryId(row), "expiry_hook_failed", { companyId: row.company_id });
    }
  }
}

/** Deletes one row's payload and key header; resolves with the failure, or null once the provider confirmed both gone. */
async function deleteObject(ctx: Ctx, row: DueRow): Promise<string | null> {
  const storage = storageFor(ctx.config.storage);
  // Deleting through another provider would "confirm" the absence of an object that lives
  // elsewhere: such a row waits until the configuration matches it again.
  if (row.storage_provider !== storage.kind) {
    return `stored with ${row.storage_provider}, but storage is configured as ${storage.kind}`;
  }
  try {
    await deleteSealed(storage, StorageKey.parse(row.storage_key));
    return null;
  } catch (error) {
    return describeError(error);
  }
}

async function deleteObjects(ctx: Ctx, rows: DueRow[], out: Outcomes): Promise<void> {
  for (const row of rows) {
    if (ctx.signal.aborted) return;
    const failure = await deleteObject(ctx, row);
    if (failure === null) {
      // Gone from storage, not yet marked: a crash here leaves the row for the next batch,
      // which deletes again (idempotent) and marks it.
      await ctx.faults.hit("restore-point-retention.after-delete");
      out.deleted.push(row);
    } else {
      out.deleteFailures.push({ id: row.id, error: `storage delete failed: ${failure}` });
      ctx.report.failed(entryId(row), "storage_delete_failed", { companyId: row.company_id });
    }
  }
}

export async function finish(ctx: Ctx, applied: Applied): Promise<void> {
  if (ctx.dryRun || ctx.companyId === null) return;
  const companyId = ctx.companyId;
  const out: Outcomes = { hooked: [], hookFailures: [], deleted: [], deleteFailures: [] };
  await runHooks(ctx, applied.hooks, out);
  await deleteObjects(ctx, applied.deletions, out);

  const counts = applied.counts;
  const now = ctx.startedAt;
  const retryAt = ctx.later(LIMITS.retryMs);
  const window = windowOf(ctx);
  const next = await ctx.locked(async (tx) => {
    const hooked = await transition(tx, out.hooked, ["expiring"], "delete_requested", now);
    counts.hooksRun = hooked.length;
    counts.deletionRequested += hooked.length;
    counts.hooksFailed = (await recordFailures(tx, out.hookFailures, ["expiring"], retryAt, now)).length;
    const deleted = new Set(
      await transition(
        tx,
        out.deleted.map((r) => r.id),
        ["superseded", "delete_requested"],
        "deleted",
        now,
      ),
    );
    for (const row of out.deleted) {
      if (deleted.has(row.id)) ctx.report.removedEntry(entryId(row), bytesOf(row), { companyId });
    }
    counts.deleted = deleted.size;
    counts.deletesFailed = (
      await recordFailures(tx, out.deleteFailures, ["superseded", "delete_requested"], retryAt, now)
    ).length;
    return nextDue(tx, companyId, window);
  });

  // Due rows that another transaction holds are skipped (due-work.sql); that transaction
  // wakes the worker when it commits. A batch that found only such rows looks again a little
  // later rather than at once, so it never spins while they stay locked.
  if (next.due_now) ctx.deadlines.at("continue", applied.locked > 0 ? now : ctx.later(LIMITS.lockedRetryMs));
  if (next.review_at) ctx.deadlines.at("retention", next.review_at);
  if (next.pending_since)
    ctx.deadlines.at("capture_grace", new Date(next.pending_since.getTime() + LIMITS.captureGraceMs));
  if (next.retry_at) ctx.deadlines.at("retry", next.retry_at);

  const changed = Object.entries(counts).some(([key, value]) => key !== "reviewed" && value > 0);
  if (changed) {
    ctx.log.info("restore point retention", {
      event: "restore_point_retention.batch",
      companyId,
      ...counts,
      candidateBytes: ctx.report.candidateBytes,
      reclaimedBytes: ctx.report.reclaimedBytes,
    });
  }
}
