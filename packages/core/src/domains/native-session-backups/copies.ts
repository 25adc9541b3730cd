/**
 * Session failover copies (`<session>/failover-backups/current`), in the job's transaction:
 * judge each session (rules.ts) on its rows, lock the rows of the candidates and judge again,
 * rename each copy that still expires to `.retiring-<UUID>`, check once more for a run of
 * those sessions and undo the rename where one appeared (or the check failed), and delete the
 * agent task sessions of the confirmed ones. finish (check.ts) makes them `.expired-*`.
 */
import path from "node:path";
import type { Tx } from "../../db";
import { PathRefused, retire, unretire } from "../../fs";
import { Batch, companyOf, copyRel, isGone, keptId, reportRefused, type Prepared } from "./batch";
import { CURRENT } from "./config";
import { finishLeftovers, Retirements } from "./leftovers";
import { unavailableRules } from "../sources";
import {
  confirmRetirements,
  deleteTaskSessions,
  lockSessionRows,
  sessionFacts,
  type SessionInput,
} from "./queries";
import { judgeSession, needsRows, SOURCES, type SessionFacts } from "./rules";
import { listBackups, type BackupsListing, type SessionSurvey } from "./survey";
import { eachBounded } from "../../fs";

const inputOf = (s: SessionSurvey): SessionInput | null =>
  s.state.status === "ok" ? { scope: s.name, ...s.state.state } : null;
export const inputs = (sessions: SessionSurvey[]) =>
  sessions.map(inputOf).filter((i): i is SessionInput => i !== null);
const sameRuns = (a: string[], b: string[]) => a.length === b.length && a.every((id, i) => id === b[i]);

export async function expireSessions(batch: Batch, tx: Tx, prepared: Prepared): Promise<number> {
  const { ctx } = batch;
  const judge = {
    now: ctx.startedAt,
    windowMs: ctx.config.windowMs,
    liveness: prepared.liveness,
    unavailable: await unavailableRules(tx, SOURCES, ctx.config.assumeEmpty),
  };
  const facts = await sessionFacts(tx, inputs(prepared.sessions.filter((s) => needsRows(s, judge))));
  const tentative: SessionSurvey[] = [];
  let handled = 0;

  // The `failover-backups/` of every session whose survey found leftovers, listed again under
  // the lock, a few at once (fs/in-order.ts): another job may have finished, restored or
  // dropped them since. One where the survey found none has nothing for this batch to finish
  // (a leftover another job leaves there meanwhile is that job's, or a later batch's): its
  // copy is judged, and its rename checks the copy is still the one surveyed.
  const relisted = new Map<string, BackupsListing>();
  if (!ctx.dryRun) {
    await eachBounded(prepared.sessions, async (s) => {
      if (s.backups && s.retiring.length + s.expired.length > 0)
        relisted.set(s.name, await listBackups(s.backups));
    });
  }
  const retirements = new Retirements(
    tx,
    prepared.sessions.flatMap((s) => {
      const listing = relisted.get(s.name);
      if (!s.backups || !listing || listing.retiring.length + listing.expired.length === 0) return [];
      const folder = `${path.relative(prepared.root, s.backups.path)}/`;
      return [{ folder, retiring: listing.retiring.map((name) => folder + name) }];
    }),
  );
  // Read (and the folders' records of names gone deleted) before any leftover is finished.
  await retirements.recorded();

  for (const session of prepared.sessions) {
    if (ctx.signal.aborted || batch.full) break;
    batch.examine();
    const leftovers = await finishLeftovers(batch, retirements, session, relisted.get(session.name));
    if (leftovers === "unfinished") break;
    const verdict =
      leftovers === "judge" ? judgeSession(session, facts.get(session.name) ?? null, judge) : null;
    // Its copy would be the 51st removal: it comes first in the next batch.
    if (verdict?.expire && !ctx.dryRun && batch.removalsLeft <= 0) break;
    handled += 1;
    if (verdict === null) continue;
    if (!verdict.expire) {
      ctx.report.skip(keptId(prepared.root, session), verdict.reason, {
        companyId: companyOf(session),
        bytes: session.current?.allocatedBytes ?? 0,
      });
      continue;
    }
    if (ctx.dryRun) {
      ctx.report.candidate(copyRel(session.name), session.current!.allocatedBytes, {
        companyId: companyOf(session),
      });
      continue;
    }
    tentative.push(session);
    batch.removalsLeft -= 1;
  }
  await retirements.flush();
  if (tentative.length === 0) return handled;

  // Lock the rows Paperclip would touch to resume these sessions, then decide again.
  await lockSessionRows(
    tx,
    tentative.map((s) => facts.get(s.name)!),
  );
  const locked = await sessionFacts(tx, inputs(tentative));
  const retiring: { session: SessionSurvey; name: string; facts: SessionFacts }[] = [];
  for (const session of tentative) {
    const id = copyRel(session.name);
    const companyId = companyOf(session);
    const now = locked.get(session.name)!;
    const verdict = judgeSession(session, now, judge);
    if (!verdict.expire) {
      ctx.report.skip(id, verdict.reason, { companyId, bytes: session.current!.allocatedBytes });
      continue;
    }
    try {
      const to = await retire(session.backups!, CURRENT, ".retiring", session.current!.identity ?? undefined);
      retiring.push({ session, name: to, facts: now });
    } catch (error) {
      if (isGone(error)) {
        ctx.report.note(id, "vanished", { companyId });
        continue;
      }
      if (!(error instanceof PathRefused)) {
        await undo(retiring);
        throw error;
      }
      if (error.reason === "identity_changed") ctx.report.skip(id, "copy_changed", { companyId });
      else reportRefused(ctx, id, error, { companyId });
      continue;
    }
    // A crash here leaves `.retiring-*` with no `current`: the next batch restores it.
    await ctx.faults.hit("native-session-backups.after-retiring-rename");
  }
  if (retiring.length === 0) return handled;

  // The final check: a run of the session that appeared since the rows were locked (it
  // would look for `current`) undoes the rename; so does a check that fails.
  let final: Map<string, SessionFacts>;
  try {
    // Part of the check: a fault here is the check failing (tests only).
    await ctx.faults.hit("native-session-backups.final-check");
    final = await sessionFacts(tx, inputs(retiring.map((r) => r.session)));
  } catch (error) {
    await undo(retiring);
    throw error;
  }
  const taskSessions: string[] = [];
  for (const item of retiring) {
    const { session } = item;
    const id = copyRel(session.name);
    const companyId = companyOf(session)!;
    const now = final.get(session.name);
    if (!now || now.unfinished_run || !sameRuns(now.run_ids, item.facts.run_ids)) {
      await undo([item]);
      ctx.report.skip(id, "run_appeared", { companyId });
      continue;
    }
    ctx.report.candidate(id, session.current!.allocatedBytes, { companyId });
    batch.applied.expiring.push({ rel: id, dir: session.backups!, retiring: item.name, companyId });
    taskSessions.push(...now.task_session_ids);
  }
  // Committed with the task sessions' deletion, or not at all: a later batch restores only
  // a `.retiring-*` without this record.
  await confirmRetirements(
    tx,
    batch.applied.expiring.map((e) => ({
      path: path.relative(batch.applied.root, e.dir.join(e.retiring)),
      companyId: e.companyId,
    })),
  );
  batch.applied.clearedTaskSessions = (await deleteTaskSessions(tx, taskSessions)).length;
  return handled;
}

async function undo(items: { session: SessionSurvey; name: string }[]): Promise<void> {
  for (const item of items) {
    // A `current` written meanwhile wins; this copy is then dropped by a later batch.
    await unretire(item.session.backups!, item.name, CURRENT).catch(() => false);
  }
}
