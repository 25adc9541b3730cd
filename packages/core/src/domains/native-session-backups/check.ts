/**
 * One batch of native session backup expiration and evidence retention (instance scope;
 * a company-scoped requested sweep diagnoses that company's sessions only, under the same
 * instance lock: the files are instance-wide).
 *
 * prepare (no lock): read the liveness report; survey session directories from the session
 *   cursor (control-plane state, the `current` copy, leftovers) until they and their
 *   leftovers make 200 entries; when the evidence check is due, list and survey evidence
 *   entries from the evidence cursor with what is left of the 200, counting the bytes of
 *   those due for removal.
 * apply (the job's transaction): read the rows of every session still in question in one
 *   query; list each session's leftovers again and finish them (restore the newest
 *   unconfirmed `.retiring-*` when `current` is missing, drop the others and any next to a
 *   `current`); lock the rows of the candidates and read them again; rename each copy that
 *   still expires to `.retiring-<UUID>`; check once more for a run of those sessions and
 *   undo the rename where one appeared (or the check failed); delete the agent task
 *   sessions of the confirmed ones. Evidence due for removal is renamed to `.expired-<UUID>`.
 *   At most 200 entries and 50 removals, shared by copies, leftovers and evidence.
 * finish (after commit): rename each confirmed copy to `.expired-<UUID>` and delete it,
 *   delete the expired evidence and leftovers, remove emptied `continuity-breaks` folders.
 *   The rest of the session directory, its control-plane state included, is never touched.
 *   Whatever another job moved first is reported `vanished`, never a failed batch.
 *
 * This file runs the walks (cursors, budgets) and the three phases. Its parts: copies.ts
 * (the session copies), leftovers.ts (an interrupted batch's `.retiring-*` / `.expired-*`),
 * evidence-expiry.ts (archives and quarantine entries); what they share is in batch.ts.
 */
import path from "node:path";
import type { Tx } from "../../db";
import { PathRefused, retire, type ProvenDir } from "../../fs";
import { INSTANCE_SCOPE } from "../../ledger";
import {
  Batch,
  evidenceJudge,
  isGone,
  remove,
  type Applied,
  type ArchiveDir,
  type Ctx,
  type Expiring,
  type Prepared,
} from "./batch";
import { CONTINUITY_BREAKS_DIR, LIMITS, SESSIONS_DIR, SWEEP_INTERVAL_MS } from "./config";
import { expireSessions, inputs } from "./copies";
import { countEvidenceBytes, listEvidence, surveyEvidence, type EvidenceEntry } from "./evidence";
import { expireEvidence } from "./evidence-expiry";
import { forgetRetirements, readLiveness, sessionFacts } from "./queries";
import { judgeEvidence, judgeSession, livenessAt, needsRows, type Judge } from "./rules";
import { eachBounded, takeInOrder } from "../../fs";
import {
  entriesOf,
  listSessionNames,
  sessionState,
  sessionsTop,
  surveySession,
  type SessionSurvey,
} from "./survey";

/** Claims that start the session walk from the top, and the evidence check. */
const SESSION_REASONS = new Set(["startup", "hourly", "retry"]);
const EVIDENCE_REASONS = new Set(["startup", "evidence", "retry"]);
/**
 * The cursor of a walk that is due but handled nothing in its batch (no room left after the
 * sessions, or every removal used before its first entry): non-null, so the continuation
 * runs it, and before every key, so it starts from the beginning. A null cursor would say
 * "not due" to the continuation, which claims only `continue`, and the walk would be lost.
 */
const NOT_STARTED = "";

/**
 * Whether a walk starts from the top in this job. A walk with a cursor always continues.
 * A requested sweep runs both walks on its first page; a later page (it carries a cursor)
 * runs only the walks that have not finished, so the session walk runs once per diagnosis.
 */
async function startsFresh(ctx: Ctx, walk: "sessions" | "evidence"): Promise<boolean> {
  if (ctx.kind === "sweep") {
    const other = await ctx.readCursor(walk === "sessions" ? "evidence" : "sessions");
    return walk === "evidence" || other === null;
  }
  return ctx.claimed.some((c) => (walk === "sessions" ? SESSION_REASONS : EVIDENCE_REASONS).has(c.reason));
}

/** The leftovers of a session, each one a removal of the batch when it is not a dry run. */
const leftoversOf = (session: SessionSurvey) => session.retiring.length + session.expired.length;

/**
 * Surveys the sessions from the cursor until they and their leftovers make `budget` entries.
 * Expiring, apply stops at the 50th removal, and a session surveyed beyond it is surveyed
 * again by the next batch (4 times over when every copy expires). So the walk first stops
 * once the copies that the rows still have to judge (rules.ts `needsRows`) and the leftovers
 * make 50; their rows are then read once, without a lock, only to see how many would expire:
 * fewer than 50, and the walk goes on to the 200 entries as before. What apply decides, under
 * the lock, is unchanged. A few sessions are surveyed at once (bounded.ts), in name order.
 */
async function walkSessions(
  ctx: Ctx,
  top: ProvenDir | null,
  names: readonly string[],
  budget: number,
  judge: Judge,
) {
  const after = await ctx.readCursor("sessions");
  if (top === null || (after === null && !(await startsFresh(ctx, "sessions"))))
    return { ran: top !== null, sessions: [], entries: 0, removals: 0, more: false };
  const start = after === null ? 0 : names.findIndex((n) => n > after);
  const todo = start < 0 ? [] : names.slice(start);
  const sessions: SessionSurvey[] = [];
  let entries = 0;
  let removals = 0;
  let removalsBudget = ctx.dryRun ? Infinity : LIMITS.removalsPerBatch;
  let looked = 0;
  const walk = () =>
    takeInOrder(
      todo.slice(looked),
      async (name) => {
        if (ctx.scope !== INSTANCE_SCOPE) {
          // A company's diagnosis: only the sessions its control-plane state assigns to it.
          const state = await sessionState(top, name);
          if (state.status !== "ok" || state.state.companyId !== ctx.scope) return null;
        }
        return surveySession(top, name, ctx.signal);
      },
      (session) => {
        if (ctx.signal.aborted || entries >= budget || removals >= removalsBudget) return false;
        looked += 1;
        if (session === null) return true;
        // Its leftovers count toward the batch's entries too.
        entries += entriesOf(session);
        removals += (needsRows(session, judge) ? 1 : 0) + leftoversOf(session);
        sessions.push(session);
        return true;
      },
      // Each session is at least one entry: never more at once than could still be taken.
      () => Math.min(budget - entries, removalsBudget - removals),
    );
  await walk();
  if (removals >= removalsBudget && looked < todo.length && entries < budget && !ctx.signal.aborted) {
    const facts = await sessionFacts(ctx.db, inputs(sessions.filter((s) => needsRows(s, judge))));
    const expiring = sessions.filter((s) => judgeSession(s, facts.get(s.name) ?? null, judge).expire);
    removals = expiring.length + sessions.reduce((n, s) => n + leftoversOf(s), 0);
    if (removals < removalsBudget) {
      removalsBudget = Infinity;
      await walk();
    }
  }
  return {
    ran: true,
    sessions,
    entries,
    removals,
    more: looked < todo.length,
    lastLooked: todo[looked - 1],
  };
}

export async function prepare(ctx: Ctx): Promise<Prepared> {
  const prepared = await survey(ctx);
  // Between the survey and the lock: what the survey saw can change here (tests only).
  await ctx.faults.hit("native-session-backups.surveyed");
  return prepared;
}

async function survey(ctx: Ctx): Promise<Prepared> {
  const root = path.join(ctx.instanceRoot, SESSIONS_DIR);
  const top = await sessionsTop(ctx.instanceRoot);
  const liveness = livenessAt(
    await readLiveness(ctx.db),
    ctx.startedAt,
    ctx.config.livenessMaxAgeSeconds * 1000,
  );
  const names = await listSessionNames(top);
  const walked = await walkSessions(ctx, top, names, LIMITS.entriesPerBatch, {
    now: ctx.startedAt,
    windowMs: ctx.config.windowMs,
    liveness,
  });
  const prepared: Prepared = {
    root,
    sessionsRan: walked.ran,
    liveness,
    sessions: walked.sessions,
    sessionsMore: walked.more,
    evidence: null,
    evidenceMore: false,
    emptyArchiveDirs: [],
    evidenceRefused: [],
  };
  // Sessions skipped by a company filter still moved the walk: remember where it stopped.
  if (walked.more && walked.sessions.length === 0 && walked.lastLooked)
    await ctx.writeCursor("sessions", walked.lastLooked);

  const evidenceAfter = await ctx.readCursor("evidence");
  if (
    top === null ||
    ctx.scope !== INSTANCE_SCOPE ||
    (evidenceAfter === null && !(await startsFresh(ctx, "evidence")))
  )
    return prepared;
  const room = LIMITS.entriesPerBatch - walked.entries;
  // Expiring: the removals the sessions may take first; evidence beyond what is left of the
  // 50 would be surveyed again by the next batch.
  const removalRoom = ctx.dryRun ? Infinity : LIMITS.removalsPerBatch - walked.removals;
  if (room <= 0 || removalRoom <= 0 || ctx.signal.aborted) {
    if (evidenceAfter === null) await ctx.writeCursor("evidence", NOT_STARTED);
    ctx.continueNow();
    return prepared;
  }
  const listing = await listEvidence(top, names, evidenceAfter, room, {
    limit: removalRoom,
    now: ctx.startedAt.getTime(),
    windowMs: ctx.config.evidenceWindowMs,
  });
  const evidence: EvidenceEntry[] = [];
  const judge = evidenceJudge(ctx, liveness);
  let removable = 0;
  await takeInOrder(
    listing.keys,
    async (key) => {
      const entry = await surveyEvidence(listing, key);
      const verdict = judgeEvidence(entry, judge);
      // Byte counting stays outside the lock, and only for what is going to be removed.
      const counted =
        verdict.remove && !verdict.leftover ? await countEvidenceBytes(entry, ctx.signal) : entry;
      return { entry: counted, remove: verdict.remove };
    },
    ({ entry, remove }) => {
      if (ctx.signal.aborted || removable >= removalRoom) return false;
      evidence.push(entry);
      if (remove) removable += 1;
      return true;
    },
    () => removalRoom - removable,
  );
  prepared.evidence = evidence;
  prepared.evidenceMore = listing.more || evidence.length < listing.keys.length;
  prepared.emptyArchiveDirs = listing.emptyArchiveDirs;
  prepared.evidenceRefused = listing.refused;
  return prepared;
}

function continueWalk(ctx: Ctx) {
  return async (name: string, handled: number, keys: string[], more: boolean, tx: Tx) => {
    if (handled < keys.length || more) {
      const last = keys[handled - 1] ?? (await ctx.readCursor(name)) ?? NOT_STARTED;
      await ctx.writeCursor(name, last, tx);
      ctx.continueNow();
    } else {
      await ctx.writeCursor(name, null, tx);
    }
  };
}

export async function apply(ctx: Ctx, tx: Tx, prepared: Prepared): Promise<Applied> {
  const batch = new Batch(ctx, prepared.root);
  const move = continueWalk(ctx);
  if (ctx.kind === "deadline" && ctx.scope === INSTANCE_SCOPE)
    ctx.deadlines.at("hourly", ctx.later(SWEEP_INTERVAL_MS));

  const sessionsHandled = await expireSessions(batch, tx, prepared);
  const sessionNames = prepared.sessions.map((s) => s.name);
  if (prepared.sessionsRan) await move("sessions", sessionsHandled, sessionNames, prepared.sessionsMore, tx);

  if (prepared.evidence !== null) {
    const handled = await expireEvidence(batch, prepared);
    await move(
      "evidence",
      handled,
      prepared.evidence.map((e) => e.key),
      prepared.evidenceMore,
      tx,
    );
  }
  return batch.applied;
}

export async function finish(ctx: Ctx, applied: Applied): Promise<void> {
  // Every confirmed copy is renamed to `.expired-*` first, then their records go in one
  // statement (one per copy grew a batch's statements with its size), then they are deleted.
  // A few at once (bounded.ts): each is its own tree, and a failure or a crash at any point
  // leaves each one `.retiring-*` or `.expired-*` for a later batch, as one at a time did.
  // Each fault point is hit once, before its step starts on any copy (a crash there leaves
  // every copy as the step found it).
  const expired: { item: Expiring; name: string }[] = [];
  // Committed, not yet `.expired`: a crash here leaves `.retiring-*` with no `current`.
  if (applied.expiring.length > 0) await ctx.faults.hit("native-session-backups.before-expired-rename");
  await eachBounded(applied.expiring, async (item) => {
    let name: string;
    try {
      name = await retire(item.dir, item.retiring, ".expired");
    } catch (error) {
      if (isGone(error)) {
        // A concurrent instance sweep restored it after this job committed (README: the
        // one window left): nothing is lost, the restored copy expires again later.
        ctx.report.note(item.rel, "vanished", { companyId: item.companyId });
      } else {
        // `.retiring-*` stays, with no `current`: the next batch restores it and decides again.
        ctx.report.failed(item.rel, "rename_failed", { companyId: item.companyId });
        ctx.retryLater();
      }
      return;
    }
    expired.push({ item, name });
  });
  // A crash before this statement (or its failure) leaves records of `.retiring-*` names
  // that no longer exist, next to the `.expired-*` they became: the batch that finishes those
  // deletes them (leftovers.ts Retirements). Outside any error handling, the fault point
  // below is such a crash.
  if (expired.length > 0) await ctx.faults.hit("native-session-backups.after-expired-rename");
  await forgetRetirements(
    ctx.db,
    expired.map(({ item }) => path.relative(applied.root, item.dir.join(item.retiring))),
  ).catch(() => undefined);
  await eachBounded(expired, ({ item, name }) =>
    remove(ctx, { rel: item.rel, dir: item.dir, name, companyId: item.companyId }),
  );
  const archiveDirs = new Map<string, ArchiveDir>(applied.archiveDirs.map((a) => [a.rel, a]));
  await eachBounded(applied.deletions, async (item) => {
    if ((await remove(ctx, item)) && item.archiveDir) archiveDirs.set(item.archiveDir.rel, item.archiveDir);
  });
  for (const { session } of archiveDirs.values()) {
    // Only an empty folder of the proven session directory goes (rmdir never follows a link);
    // anything written into it meanwhile keeps it.
    await session.removeEmptyDir(CONTINUITY_BREAKS_DIR).catch((error: unknown) => {
      if (!(error instanceof PathRefused)) throw error;
    });
  }
  if (ctx.report.candidates > 0 || ctx.report.removed > 0) {
    ctx.log.info("native session backups", {
      event: "native_session_backups.retention",
      dryRun: ctx.dryRun,
      candidates: ctx.report.entries.filter((e) => e.outcome === "candidate").map((e) => e.id),
      candidateBytes: ctx.report.candidateBytes,
      reclaimedBytes: ctx.report.reclaimedBytes,
      clearedTaskSessions: applied.clearedTaskSessions,
      skipped: ctx.report.skipped,
    });
  }
}
