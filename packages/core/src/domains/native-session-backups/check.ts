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
 */
import { rmdir } from "node:fs/promises";
import path from "node:path";
import { MINUTE_MS } from "../../clock";
import type { Tx } from "../../db";
import { entryKind, removeRetired, retire, RetireRefused, unretire, type RetiredPrefix } from "../../fs";
import { INSTANCE_SCOPE, type ReportEntry } from "../../ledger";
import type { JobContext } from "../types";
import {
  BACKUPS_DIR,
  CONTINUITY_BREAKS_DIR,
  CURRENT,
  LIMITS,
  SESSIONS_DIR,
  SWEEP_INTERVAL_MS,
  type NativeSessionBackupsConfig,
} from "./config";
import {
  countEvidenceBytes,
  isRealDirPath,
  listEvidence,
  surveyEvidence,
  type EvidenceEntry,
} from "./evidence";
import {
  confirmedRetirements,
  confirmRetirements,
  deleteTaskSessions,
  forgetRetirements,
  lockSessionRows,
  readLiveness,
  sessionFacts,
  type SessionInput,
} from "./queries";
import { unavailableRules } from "../sources";
import {
  judgeEvidence,
  judgeSession,
  livenessAt,
  needsRows,
  SOURCES,
  type Liveness,
  type SessionFacts,
} from "./rules";
import {
  entriesOf,
  listBackups,
  listSessionNames,
  readControlPlaneState,
  surveyCopy,
  surveySession,
  type SessionSurvey,
} from "./survey";

type Ctx = JobContext<NativeSessionBackupsConfig>;

const RETRY_MS = 15 * MINUTE_MS;
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

export interface Prepared {
  root: string;
  /** The session walk is due in this batch. */
  sessionsRan: boolean;
  liveness: Liveness;
  sessions: SessionSurvey[];
  sessionsMore: boolean;
  /** null when the evidence check is not due in this batch. */
  evidence: EvidenceEntry[] | null;
  evidenceMore: boolean;
  emptyArchiveDirs: string[];
}

interface Deletion {
  rel: string;
  path: string;
  companyId?: string | null;
  reason?: string;
  /** Evidence (or its leftover): a failed removal makes the evidence check due at the next sweep. */
  evidence?: boolean;
  /** The `continuity-breaks` folder it was in (relative to the root), to remove once empty. */
  archiveDir?: string;
}

interface Expiring {
  rel: string;
  retiring: string;
  companyId: string;
}

export interface Applied {
  root: string;
  expiring: Expiring[];
  deletions: Deletion[];
  archiveDirs: string[];
  clearedTaskSessions: number;
}

const later = (ctx: Ctx, ms: number) => new Date(ctx.startedAt.getTime() + ms);

/** Moved or deleted since it was read: by another job, the executor, or the Paperclip server. */
const isGone = (error: unknown) =>
  (error instanceof RetireRefused && error.reason === "missing") ||
  (error as NodeJS.ErrnoException | null)?.code === "ENOENT";

/**
 * Renames an entry aside; null, with a skip in the report, when it cannot be: gone since it
 * was read (`vanished`), or refused (`symlink`, `not_a_directory`). Never fails the batch
 * for one entry; any other failure (I/O) is the batch's.
 */
async function retireOrSkip(
  ctx: Ctx,
  target: string,
  prefix: RetiredPrefix,
  id: string,
  extra: Partial<ReportEntry> = {},
): Promise<string | null> {
  try {
    return await retire(target, prefix);
  } catch (error) {
    if (isGone(error)) ctx.report.skip(id, "vanished", extra);
    else if (error instanceof RetireRefused) ctx.report.skip(id, error.reason, extra);
    else throw error;
    return null;
  }
}

/**
 * Ask for the next batch at once. Only a deadline job does: a requested sweep continues
 * through its report's nextCursor, and a `continue` deadline from it would start a real
 * (not dry-run) deadline job on the deadline walk's own cursors.
 */
function continueNow(ctx: Ctx): void {
  if (ctx.kind === "deadline") ctx.deadlines.at("continue", ctx.startedAt);
}
const rel = (key: string) => `${SESSIONS_DIR}/${key}`;
const copyRel = (session: string) => rel(`${session}/${BACKUPS_DIR}/${CURRENT}`);

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

async function walkSessions(ctx: Ctx, root: string, names: string[], budget: number) {
  const after = await ctx.readCursor("sessions");
  if (after === null && !(await startsFresh(ctx, "sessions")))
    return { ran: false, sessions: [], entries: 0, more: false };
  const start = after === null ? 0 : names.findIndex((n) => n > after);
  const todo = start < 0 ? [] : names.slice(start);
  const sessions: SessionSurvey[] = [];
  let looked = 0;
  let entries = 0;
  for (const name of todo) {
    if (ctx.signal.aborted || entries >= budget) break;
    looked += 1;
    if (ctx.scope !== INSTANCE_SCOPE) {
      // A company's diagnosis: only the sessions its control-plane state assigns to it.
      const state = await readControlPlaneState(path.join(root, name));
      if (state.status !== "ok" || state.state.companyId !== ctx.scope) continue;
    }
    const session = await surveySession(root, name, ctx.signal);
    // Its leftovers count toward the batch's entries too.
    entries += entriesOf(session);
    sessions.push(session);
  }
  return { ran: true, sessions, entries, more: looked < todo.length, lastLooked: todo[looked - 1] };
}

export async function prepare(ctx: Ctx): Promise<Prepared> {
  const prepared = await survey(ctx);
  // Between the survey and the lock: what the survey saw can change here (tests only).
  await ctx.faults.hit("native-session-backups.surveyed");
  return prepared;
}

/** Judged as apply will judge them, before any lock, to count only removable entries' bytes. */
const evidenceJudge = (ctx: Ctx, liveness: Liveness) => ({
  now: ctx.startedAt,
  windowMs: ctx.config.evidenceWindowMs,
  liveness,
});

async function survey(ctx: Ctx): Promise<Prepared> {
  const root = path.join(ctx.instanceRoot, SESSIONS_DIR);
  const liveness = livenessAt(
    await readLiveness(ctx.db),
    ctx.startedAt,
    ctx.config.livenessMaxAgeSeconds * 1000,
  );
  const names = await listSessionNames(root);
  const walked = await walkSessions(ctx, root, names, LIMITS.entriesPerBatch);
  const prepared: Prepared = {
    root,
    sessionsRan: walked.ran,
    liveness,
    sessions: walked.sessions,
    sessionsMore: walked.more,
    evidence: null,
    evidenceMore: false,
    emptyArchiveDirs: [],
  };
  // Sessions skipped by a company filter still moved the walk: remember where it stopped.
  if (walked.more && walked.sessions.length === 0 && walked.lastLooked)
    await ctx.writeCursor("sessions", walked.lastLooked);

  const evidenceAfter = await ctx.readCursor("evidence");
  if (ctx.scope !== INSTANCE_SCOPE || (evidenceAfter === null && !(await startsFresh(ctx, "evidence"))))
    return prepared;
  const room = LIMITS.entriesPerBatch - walked.entries;
  if (room <= 0 || ctx.signal.aborted) {
    if (evidenceAfter === null) await ctx.writeCursor("evidence", NOT_STARTED);
    continueNow(ctx);
    return prepared;
  }
  const listing = await listEvidence(root, names, evidenceAfter, room);
  const evidence: EvidenceEntry[] = [];
  const judge = evidenceJudge(ctx, liveness);
  for (const key of listing.keys) {
    if (ctx.signal.aborted) break;
    const entry = await surveyEvidence(root, key);
    const verdict = judgeEvidence(entry, judge);
    // Byte counting stays outside the lock, and only for what is going to be removed.
    evidence.push(verdict.remove && !verdict.leftover ? await countEvidenceBytes(entry, ctx.signal) : entry);
  }
  prepared.evidence = evidence;
  prepared.evidenceMore = listing.more || evidence.length < listing.keys.length;
  prepared.emptyArchiveDirs = listing.emptyArchiveDirs;
  return prepared;
}

const inputOf = (s: SessionSurvey): SessionInput | null =>
  s.state.status === "ok" ? { scope: s.name, ...s.state.state } : null;
const inputs = (sessions: SessionSurvey[]) =>
  sessions.map(inputOf).filter((i): i is SessionInput => i !== null);
const companyOf = (s: SessionSurvey) => (s.state.status === "ok" ? s.state.state.companyId : null);

/**
 * The batch's shared limits: 200 entries looked at (sessions, their leftovers, evidence
 * entries) and 50 removals (copies, leftovers, evidence).
 */
class Batch {
  entriesLeft: number = LIMITS.entriesPerBatch;
  removalsLeft: number = LIMITS.removalsPerBatch;
  readonly applied: Applied;
  constructor(
    readonly ctx: Ctx,
    root: string,
  ) {
    this.applied = { root, expiring: [], deletions: [], archiveDirs: [], clearedTaskSessions: 0 };
  }

  get full(): boolean {
    return this.entriesLeft <= 0 || this.removalsLeft <= 0;
  }

  /** An entry is looked at: it counts toward `checked` and the 200. */
  examine(): void {
    this.entriesLeft -= 1;
    this.ctx.report.examined();
  }

  delete(item: Deletion): void {
    this.applied.deletions.push(item);
    this.removalsLeft -= 1;
  }
}

/**
 * The `.retiring-*` copy to put back when `current` is missing: the newest by when it was
 * written (its newest entry, or its manifest's completedAt), not the first by name (a random
 * UUID). Only a real directory is restored; null when there is none.
 */
async function newestCopy(retiring: string[]): Promise<string | null> {
  let newest: { path: string; writtenAtMs: number } | null = null;
  for (const candidate of retiring) {
    const copy = await surveyCopy(candidate);
    if (copy?.kind !== "directory") continue;
    if (newest === null || copy.writtenAtMs > newest.writtenAtMs) newest = copy;
  }
  return newest?.path ?? null;
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
async function finishLeftovers(
  batch: Batch,
  tx: Tx,
  session: SessionSurvey,
): Promise<"judge" | "wait" | "unfinished"> {
  const { ctx } = batch;
  if (ctx.dryRun || session.kind !== "directory") return "judge";
  // Read again under the lock: another job may have finished, restored or dropped what the
  // survey saw (its finish runs after its commit, outside the lock).
  const backups = await listBackups(session.path);
  const companyId = companyOf(session);
  const leftover = (p: string) => rel(`${session.name}/${BACKUPS_DIR}/${path.basename(p)}`);
  for (const expired of backups.expired) {
    if (batch.full) return "unfinished";
    batch.examine();
    batch.delete({ rel: leftover(expired), path: expired, companyId, reason: "interrupted_deletion" });
  }
  const confirmed = await finishConfirmed(batch, tx, backups.retiring, leftover, companyId);
  if (confirmed === "unfinished") return "unfinished";
  const unconfirmed = backups.retiring.filter((p) => !confirmed.has(p));
  let superseded = unconfirmed;
  const restore = backups.current ? null : await newestCopy(unconfirmed);
  if (restore !== null) {
    // Never confirmed (its transaction did not commit): the newest such copy goes back, the
    // others are superseded by it, and a later batch decides from what is there.
    if (batch.full) return "unfinished";
    batch.examine();
    await ctx.faults.hit("native-session-backups.before-leftover-rename");
    let restored: boolean;
    try {
      restored = await unretire(restore, path.join(session.path, BACKUPS_DIR, CURRENT));
    } catch (error) {
      if (!isGone(error)) throw error;
      // Another job moved it first: none of the others is dropped (one may be the only copy).
      ctx.report.skip(leftover(restore), "vanished", { companyId });
      continueNow(ctx);
      return "wait";
    }
    continueNow(ctx);
    // `current` was written meanwhile: every `.retiring-*` is superseded, at the next batch.
    if (!restored) return "wait";
    await ctx.faults.hit("native-session-backups.after-restore-rename");
    ctx.report.skip(copyRel(session.name), "unconfirmed_copy_restored", { companyId });
    superseded = unconfirmed.filter((p) => p !== restore);
  }
  for (const stale of superseded) {
    // A newer copy exists. Renamed first, so an interrupted delete leaves an `.expired-*`,
    // never a half-deleted `.retiring-*` that a later batch could restore.
    if (batch.full) return "unfinished";
    batch.examine();
    const id = leftover(stale);
    await ctx.faults.hit("native-session-backups.before-leftover-rename");
    const to = await retireOrSkip(ctx, stale, ".expired", id, { companyId });
    if (to === null) continue;
    await ctx.faults.hit("native-session-backups.after-superseded-rename");
    batch.delete({ rel: id, path: to, companyId, reason: "superseded_by_newer_copy" });
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
  tx: Tx,
  retiring: string[],
  leftover: (p: string) => string,
  companyId: string | null,
): Promise<Set<string> | "unfinished"> {
  const { ctx } = batch;
  const relative = (p: string) => path.relative(batch.applied.root, p);
  const recorded = await confirmedRetirements(tx, retiring.map(relative));
  const confirmed = new Set(retiring.filter((p) => recorded.has(relative(p))));
  for (const copy of confirmed) {
    if (batch.full) return "unfinished";
    batch.examine();
    const id = leftover(copy);
    const to = await retireOrSkip(ctx, copy, ".expired", id, { companyId });
    await forgetRetirements(tx, [relative(copy)]);
    if (to === null) continue;
    batch.delete({ rel: id, path: to, companyId, reason: "confirmed_copy_interrupted" });
  }
  return confirmed;
}

const sameRuns = (a: string[], b: string[]) => a.length === b.length && a.every((id, i) => id === b[i]);

async function expireSessions(batch: Batch, tx: Tx, prepared: Prepared): Promise<number> {
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

  for (const session of prepared.sessions) {
    if (ctx.signal.aborted || batch.full) break;
    batch.examine();
    const leftovers = await finishLeftovers(batch, tx, session);
    if (leftovers === "unfinished") break;
    const verdict =
      leftovers === "judge" ? judgeSession(session, facts.get(session.name) ?? null, judge) : null;
    // Its copy would be the 51st removal: it comes first in the next batch.
    if (verdict?.expire && !ctx.dryRun && batch.removalsLeft <= 0) break;
    handled += 1;
    if (verdict === null) continue;
    if (!verdict.expire) {
      ctx.report.skip(copyRel(session.name), verdict.reason, {
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
  if (tentative.length === 0) return handled;

  // Lock the rows Paperclip would touch to resume these sessions, then decide again.
  await lockSessionRows(
    tx,
    tentative.map((s) => facts.get(s.name)!),
  );
  const locked = await sessionFacts(tx, inputs(tentative));
  const retiring: { session: SessionSurvey; path: string; facts: SessionFacts }[] = [];
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
      const to = await retire(session.current!.path, ".retiring", session.current!.identity ?? undefined);
      retiring.push({ session, path: to, facts: now });
    } catch (error) {
      if (isGone(error)) {
        ctx.report.skip(id, "vanished", { companyId });
        continue;
      }
      if (!(error instanceof RetireRefused)) {
        await undo(retiring);
        throw error;
      }
      ctx.report.skip(id, error.reason === "identity_changed" ? "copy_changed" : error.reason, { companyId });
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
    batch.applied.expiring.push({ rel: id, retiring: item.path, companyId });
    taskSessions.push(...now.task_session_ids);
  }
  // Committed with the task sessions' deletion, or not at all: a later batch restores only
  // a `.retiring-*` without this record.
  await confirmRetirements(
    tx,
    batch.applied.expiring.map((e) => ({ path: path.relative(batch.applied.root, e.retiring), companyId: e.companyId })),
  );
  batch.applied.clearedTaskSessions = (await deleteTaskSessions(tx, taskSessions)).length;
  return handled;
}

async function undo(items: { session: SessionSurvey; path: string }[]): Promise<void> {
  for (const item of items) {
    // A `current` written meanwhile wins; this copy is then dropped by a later batch.
    await unretire(item.path, path.join(item.session.path, BACKUPS_DIR, CURRENT)).catch(() => false);
  }
}

function continueWalk(ctx: Ctx) {
  return async (name: string, handled: number, keys: string[], more: boolean, tx: Tx) => {
    if (handled < keys.length || more) {
      const last = keys[handled - 1] ?? (await ctx.readCursor(name)) ?? NOT_STARTED;
      await ctx.writeCursor(name, last, tx);
      continueNow(ctx);
    } else {
      await ctx.writeCursor(name, null, tx);
    }
  };
}

async function expireEvidence(batch: Batch, prepared: Prepared): Promise<number> {
  const { ctx } = batch;
  const judge = evidenceJudge(ctx, prepared.liveness);
  let handled = 0;
  let nextDue: Date | null = null;
  let again = false;
  for (const entry of prepared.evidence ?? []) {
    if (ctx.signal.aborted || batch.full) break;
    handled += 1;
    batch.examine();
    const id = rel(entry.key);
    const folder = path.dirname(entry.key);
    const archiveDir = entry.key.split("/")[1] === CONTINUITY_BREAKS_DIR ? folder : undefined;
    const verdict = judgeEvidence(entry, judge);
    if (!verdict.remove) {
      ctx.report.skip(id, verdict.reason);
      if (verdict.dueAt && (nextDue === null || verdict.dueAt < nextDue)) nextDue = verdict.dueAt;
      again ||= verdict.busy === true;
      continue;
    }
    // The folders above it were real directories when listed; one replaced by a symlink
    // since would take the rename or the delete into the link's target.
    if (!(await isRealDirPath(prepared.root, folder))) {
      ctx.report.skip(id, "symlink");
      continue;
    }
    if (verdict.leftover) {
      if (!ctx.dryRun)
        batch.delete({
          rel: id,
          path: entry.path,
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
    const to = await retireOrSkip(ctx, entry.path, ".expired", id);
    if (to === null) continue;
    ctx.report.candidate(id, entry.allocatedBytes);
    batch.delete({ rel: id, path: to, evidence: true, archiveDir });
    await ctx.faults.hit("native-session-backups.after-evidence-rename");
  }
  // Nothing polls: the oldest retained entry says when to look again; a busy session or
  // unknown liveness, at the next hourly sweep.
  if (nextDue !== null) ctx.deadlines.at("evidence", nextDue);
  if (again) ctx.deadlines.at("evidence", later(ctx, SWEEP_INTERVAL_MS));
  if (!ctx.dryRun) batch.applied.archiveDirs.push(...prepared.emptyArchiveDirs);
  return handled;
}

export async function apply(ctx: Ctx, tx: Tx, prepared: Prepared): Promise<Applied> {
  const batch = new Batch(ctx, prepared.root);
  const move = continueWalk(ctx);
  if (ctx.kind === "deadline" && ctx.scope === INSTANCE_SCOPE)
    ctx.deadlines.at("hourly", later(ctx, SWEEP_INTERVAL_MS));

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

/**
 * Deletes a retired tree and reports it; true when it is gone. Already gone, or taken
 * mid-way by another job's leftover pass: `vanished` (that job reports it). A failure
 * leaves the retired name for a later batch: evidence at the next sweep, copies sooner.
 */
async function remove(ctx: Ctx, item: Deletion): Promise<boolean> {
  const extra = {
    ...(item.companyId !== undefined ? { companyId: item.companyId } : {}),
    ...(item.reason ? { reason: item.reason } : {}),
  };
  let bytes: number | null;
  try {
    bytes = (await entryKind(item.path)) === "missing" ? null : await removeRetired(item.path);
  } catch (error) {
    if (!isGone(error)) {
      ctx.report.failed(item.rel, "delete_failed", extra);
      if (item.evidence) ctx.deadlines.at("evidence", later(ctx, SWEEP_INTERVAL_MS));
      else ctx.deadlines.at("retry", later(ctx, RETRY_MS));
      return false;
    }
    bytes = null;
  }
  if (bytes === null) ctx.report.skip(item.rel, "vanished", extra);
  else ctx.report.removedEntry(item.rel, bytes, extra);
  return true;
}

export async function finish(ctx: Ctx, applied: Applied): Promise<void> {
  for (const item of applied.expiring) {
    // Committed, not yet `.expired`: a crash here leaves `.retiring-*` with no `current`.
    await ctx.faults.hit("native-session-backups.before-expired-rename");
    let expired: string;
    try {
      expired = await retire(item.retiring, ".expired");
    } catch (error) {
      if (isGone(error)) {
        // A concurrent instance sweep restored it after this job committed (README: the
        // one window left): nothing is lost, the restored copy expires again later.
        ctx.report.skip(item.rel, "vanished", { companyId: item.companyId });
      } else {
        // `.retiring-*` stays, with no `current`: the next batch restores it and decides again.
        ctx.report.failed(item.rel, "rename_failed", { companyId: item.companyId });
        ctx.deadlines.at("retry", later(ctx, RETRY_MS));
      }
      continue;
    }
    await forgetRetirements(ctx.db, [path.relative(applied.root, item.retiring)]).catch(() => undefined);
    // Outside any error handling: a crash here leaves `.expired-*` for the next batch.
    await ctx.faults.hit("native-session-backups.after-expired-rename");
    await remove(ctx, { rel: item.rel, path: expired, companyId: item.companyId });
  }
  const archiveDirs = new Set(applied.archiveDirs);
  for (const item of applied.deletions) {
    if ((await remove(ctx, item)) && item.archiveDir) archiveDirs.add(item.archiveDir);
  }
  for (const dir of archiveDirs) {
    // Only an empty folder of a real session directory goes; anything written into it
    // meanwhile keeps it.
    if (await isRealDirPath(applied.root, dir))
      await rmdir(path.join(applied.root, dir)).catch(() => undefined);
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
