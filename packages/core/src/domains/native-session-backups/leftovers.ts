/**
 * A session's `.retiring-*` and `.expired-*` left by an interrupted batch, finished under the
 * lock before its copy is judged: the newest unconfirmed `.retiring-*` goes back when
 * `current` is missing, the others (and any next to a `current`) are dropped.
 */
import path from "node:path";
import type { Tx } from "../../db";
import { unretire, type ProvenDir } from "../../fs";
import { Batch, companyOf, copyRel, isGone, rel, retireOrSkip } from "./batch";
import { BACKUPS_DIR, CURRENT } from "./config";
import { confirmedRetirementsIn, forgetRetirements } from "./queries";
import { surveyCopy, type BackupsListing, type SessionSurvey } from "./survey";

/**
 * The batch's records of confirmed retirements (reclaim_confirmed_retirements), in the job's
 * transaction: read once for every session of the batch whose `failover-backups/` holds
 * leftovers under the lock (deleting, in the same statement, the records there of names no
 * longer listed: left by a finish interrupted between its `.expired` renames and their
 * records' deletion, which sits next to the `.expired-*` it left), and the records of the
 * copies finished here deleted together at the end (`flush`): a statement per session or per
 * copy grew a batch with its size.
 */
export class Retirements {
  private confirmed: Promise<Set<string>> | null = null;
  private readonly finished: string[] = [];
  constructor(
    private readonly tx: Tx,
    /**
     * The folders with leftovers (`<session>/failover-backups/`, relative to the sessions
     * root) and their `.retiring-*` paths, as listed under the lock.
     */
    private readonly folders: { folder: string; retiring: string[] }[],
  ) {}

  /** The confirmed `.retiring-*` paths (relative to the sessions root) of the batch's sessions. */
  recorded(): Promise<Set<string>> {
    return (this.confirmed ??= confirmedRetirementsIn(this.tx, this.folders));
  }

  /** The copy left `.retiring-*`: its record goes at `flush`. */
  forget(relative: string): void {
    this.finished.push(relative);
  }

  flush(): Promise<void> {
    return forgetRetirements(this.tx, this.finished);
  }
}

/**
 * The `.retiring-*` copy to put back when `current` is missing: the newest by when it was
 * written (its newest entry, or its manifest's completedAt), not the first by name (a random
 * UUID). Only a real directory is restored; null when there is none.
 */
async function newestCopy(backups: ProvenDir, retiring: string[]): Promise<string | null> {
  let newest: { name: string; writtenAtMs: number } | null = null;
  for (const name of retiring) {
    const copy = await surveyCopy(backups, name);
    if (copy?.kind !== "directory") continue;
    if (newest === null || copy.writtenAtMs > newest.writtenAtMs)
      newest = { name, writtenAtMs: copy.writtenAtMs };
  }
  return newest?.name ?? null;
}

/**
 * What happens to a session's `.retiring-*` and `.expired-*` left by an interrupted batch,
 * each one an entry of the batch (and each deletion a removal). A `.retiring-*` whose
 * expiry committed (confirmed, reclaim_confirmed_retirements) goes on to `.expired-*` and
 * deletion; only an unconfirmed one is ever restored:
 *   judge       none left, or all done: judge the copy now;
 *   wait        its copy was just restored, or moved by another job: judged by a later batch;
 *   unfinished  the batch is full: the session comes first in the next one.
 * A dry run leaves them as they are.
 */
export async function finishLeftovers(
  batch: Batch,
  retirements: Retirements,
  session: SessionSurvey,
  relisted: BackupsListing | undefined,
): Promise<"judge" | "wait" | "unfinished"> {
  const { ctx } = batch;
  const dir = session.backups;
  if (ctx.dryRun || dir === null || relisted === undefined) return "judge";
  // Read again under the lock (the caller lists the batch's sessions at once): another job
  // may have finished, restored or dropped what the survey saw (its finish runs after its
  // commit, outside the lock).
  const backups = relisted;
  const companyId = companyOf(session);
  const leftover = (name: string) => rel(`${session.name}/${BACKUPS_DIR}/${name}`);
  for (const expired of backups.expired) {
    if (batch.full) return "unfinished";
    batch.examine();
    batch.delete({ rel: leftover(expired), dir, name: expired, companyId, reason: "interrupted_deletion" });
  }
  const confirmed = await finishConfirmed(batch, retirements, dir, backups.retiring, leftover, companyId);
  if (confirmed === "unfinished") return "unfinished";
  const unconfirmed = backups.retiring.filter((p) => !confirmed.has(p));
  let superseded = unconfirmed;
  const restore = backups.current ? null : await newestCopy(dir, unconfirmed);
  if (restore !== null) {
    // Never confirmed (its transaction did not commit): the newest such copy goes back, the
    // others are superseded by it, and a later batch decides from what is there.
    if (batch.full) return "unfinished";
    batch.examine();
    await ctx.faults.hit("native-session-backups.before-leftover-rename");
    let restored: boolean;
    try {
      restored = await unretire(dir, restore, CURRENT);
    } catch (error) {
      if (!isGone(error)) throw error;
      // Another job moved it first: none of the others is dropped (one may be the only copy).
      ctx.report.note(leftover(restore), "vanished", { companyId });
      ctx.continueNow();
      return "wait";
    }
    ctx.continueNow();
    // `current` was written meanwhile: every `.retiring-*` is superseded, at the next batch.
    if (!restored) return "wait";
    await ctx.faults.hit("native-session-backups.after-restore-rename");
    ctx.report.note(copyRel(session.name), "unconfirmed_copy_restored", { companyId });
    superseded = unconfirmed.filter((p) => p !== restore);
  }
  for (const stale of superseded) {
    // A newer copy exists. Renamed first, so an interrupted delete leaves an `.expired-*`,
    // never a half-deleted `.retiring-*` that a later batch could restore.
    if (batch.full) return "unfinished";
    batch.examine();
    const id = leftover(stale);
    await ctx.faults.hit("native-session-backups.before-leftover-rename");
    const to = await retireOrSkip(ctx, dir, stale, ".expired", id, { companyId });
    if (to === null) continue;
    await ctx.faults.hit("native-session-backups.after-superseded-rename");
    batch.delete({ rel: id, dir, name: to, companyId, reason: "superseded_by_newer_copy" });
  }
  return restore === null ? "judge" : "wait";
}

/**
 * The confirmed `.retiring-*` copies of a session (their expiry committed, then the batch
 * stopped before `.expired`): renamed to `.expired-*` and deleted like any confirmed copy.
 * Returns the `.retiring-*` paths that were confirmed, or "unfinished" when the batch is full.
 */
async function finishConfirmed(
  batch: Batch,
  retirements: Retirements,
  dir: ProvenDir,
  retiring: string[],
  leftover: (name: string) => string,
  companyId: string | null,
): Promise<Set<string> | "unfinished"> {
  const { ctx } = batch;
  if (retiring.length === 0) return new Set();
  const relative = (name: string) => path.relative(batch.applied.root, dir.join(name));
  const recorded = await retirements.recorded();
  const confirmed = new Set(retiring.filter((p) => recorded.has(relative(p))));
  for (const copy of confirmed) {
    if (batch.full) return "unfinished";
    batch.examine();
    const id = leftover(copy);
    const to = await retireOrSkip(ctx, dir, copy, ".expired", id, { companyId });
    retirements.forget(relative(copy));
    if (to === null) continue;
    batch.delete({ rel: id, dir, name: to, companyId, reason: "confirmed_copy_interrupted" });
  }
  return confirmed;
}
