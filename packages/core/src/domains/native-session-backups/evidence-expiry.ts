/**
 * Continuity-break archives and quarantine entries past their window, in the job's
 * transaction: judged by rules.ts on what the survey read, renamed to `.expired-<UUID>` in a
 * folder confirmed right before and after the rename (still the directory proven: a level
 * above replaced by a link leads its path elsewhere); the oldest kept entry says when the
 * evidence check is due next.
 */
import { Batch, evidenceJudge, rel, relOf, reportRefused, retireOrSkip, type Prepared } from "./batch";
import { SWEEP_INTERVAL_MS } from "./config";
import { judgeEvidence } from "./rules";

export async function expireEvidence(batch: Batch, prepared: Prepared): Promise<number> {
  const { ctx } = batch;
  const judge = evidenceJudge(ctx, prepared.liveness);
  let handled = 0;
  let nextDue: Date | null = null;
  let again = false;
  // Folders that are links: never walked; everything in them stays.
  for (const refused of prepared.evidenceRefused)
    reportRefused(ctx, relOf(prepared.root, refused.at), refused);
  for (const entry of prepared.evidence ?? []) {
    if (ctx.signal.aborted || batch.full) break;
    handled += 1;
    batch.examine();
    const id = rel(entry.key);
    const archiveDir = entry.archiveDir;
    const verdict = judgeEvidence(entry, judge);
    if (!verdict.remove) {
      // Gone since it was listed: noted, not a skip (nothing is kept).
      if (verdict.reason === "vanished") ctx.report.note(id, "vanished");
      else ctx.report.skip(id, verdict.reason);
      if (verdict.dueAt && (nextDue === null || verdict.dueAt < nextDue)) nextDue = verdict.dueAt;
      again ||= verdict.busy === true;
      continue;
    }
    // The folders above it were real directories when listed; one replaced by a symlink
    // since would take the rename or the delete into the link's target: the rename
    // (retireOrSkip) and the delete (remove) confirm its folder right before (and after)
    // they act, refusing a changed one (`path_changed`). (A recheck of every level here
    // cost three syscalls an entry, dry runs included, for what those confirms see.)
    if (verdict.leftover) {
      if (!ctx.dryRun)
        batch.delete({
          rel: id,
          dir: entry.dir,
          name: entry.entryName,
          reason: "interrupted_deletion",
          evidence: true,
          archiveDir,
        });
      continue;
    }
    if (ctx.dryRun) {
      ctx.report.candidate(id, entry.allocatedBytes);
      continue;
    }
    const to = await retireOrSkip(ctx, entry.dir, entry.entryName, ".expired", id);
    if (to === null) continue;
    ctx.report.candidate(id, entry.allocatedBytes);
    batch.delete({
      rel: id,
      dir: entry.dir,
      name: to,
      evidence: true,
      ...(archiveDir ? { archiveDir } : {}),
    });
    await ctx.faults.hit("native-session-backups.after-evidence-rename");
  }
  // Nothing polls: the oldest retained entry says when to look again; a busy session or
  // unknown liveness, at the next hourly sweep.
  if (nextDue !== null) ctx.deadlines.at("evidence", nextDue);
  if (again) ctx.deadlines.at("evidence", ctx.later(SWEEP_INTERVAL_MS));
  if (!ctx.dryRun) batch.applied.archiveDirs.push(...prepared.emptyArchiveDirs);
  return handled;
}
