/**
 * One batch of native workspace sync retention for a scope.
 *
 * prepare (no lock): one listing of the folder (reused while it is unchanged: fs/listings.ts);
 *   finish up to 50 interrupted deletions (`.expired-*`, own cursor); find the folders of this scope after the folder cursor
 *   (company: its runs' folders, with their status and finish, asking PostgreSQL only about
 *   names this process has not seen (queries.ts); instance: folders with no run, plus start-up
 *   deadline discovery for every company that has folders); take those this batch can examine
 *   (at most 200, and none from the 51st that can be removable at all on; a dry run too, so its
 *   batches are the real run's) and survey the ones whose run's status and finish already keep
 *   them, a few at once.
 * apply (the job's transaction, company lock): judge every folder on its run's state read
 *   without a lock (one query; a folder not surveyed yet on its run's state alone); most are
 *   kept, and a folder its run keeps is never locked. For the candidates (at most 50) take
 *   each run's finalization ownership lock in one query (held elsewhere: skip,
 *   retry in 15 minutes), held until commit; read their run state again and survey each folder
 *   under it (a folder surveyed before the lock is surveyed again), with the kept folders not
 *   surveyed yet (for the report), a few at once; judge again (rules.ts), and rename the
 *   removable ones to `.expired-<UUID>`, a few at once. Each folder is thus walked once (a
 *   candidate under its run's lock), and decided and renamed in one transaction holding its
 *   run's lock.
 * finish (after commit): delete what was renamed, a few at once (claimed first, as leftovers
 *   are: another job's leftover pass may meet it); a failed delete stays for a later batch.
 */
import type { Dirent } from "node:fs";
import path from "node:path";
import { LOCK_NAMESPACES, tryLockMany, type Tx } from "../../db";
import {
  BOUNDED_WIDTH,
  claimAndRemove,
  DELETES_AT_ONCE,
  finishInterruptedDeletes,
  mapInOrder,
  PathRefused,
  ProvenDir,
  retire,
  sameIdentity,
  type Identity,
} from "../../fs";
import { INSTANCE_SCOPE } from "../../ledger";
import { recordedProcessIsLive } from "../../process/liveness";
import type { JobContext } from "../types";
import { LIMITS, SYNC_DIR, type NativeWorkspaceSyncConfig } from "./config";
import { companyRunsInOrder, runOwners, runStates } from "./queries";
import { judgeFolder, mayBeRemovable, type Verdict } from "./rules";
import { runFolderNames, surveyFolders, type FolderSurvey } from "./survey";

type Ctx = JobContext<NativeWorkspaceSyncConfig>;

export interface Prepared {
  /** The configured top folder, proven; null when it does not exist (nothing to do). */
  top: ProvenDir | null;
  /**
   * This batch's folders in name order, each with its survey when it was taken here: a folder
   * whose run's status and finish already keep it is surveyed before the transaction (for the
   * report); any other is surveyed in the transaction, under its run's lock when it is a
   * candidate (one walk per folder).
   */
  folders: { name: string; survey: FolderSurvey | null }[];
  /** Folders of this scope beyond this batch. */
  more: boolean;
}

export interface Applied {
  top: ProvenDir | null;
  /** Renamed to `.expired-*` in `top`, to delete after commit. */
  retired: { rel: string; name: string; companyId: string | null }[];
}

const rel = (name: string) => `${SYNC_DIR}/${name}`;

async function finishLeftovers(ctx: Ctx, top: ProvenDir, listing: readonly Dirent[]): Promise<void> {
  if (ctx.dryRun) return;
  const after = await ctx.readCursor("leftovers");
  const batch = await finishInterruptedDeletes(top, {
    prefixes: [".expired"],
    limit: LIMITS.leftoversPerBatch,
    after,
    signal: ctx.signal,
    listing,
  });
  // Most batches find none: then no statement.
  if (batch.cursor !== after) await ctx.writeCursor("leftovers", batch.cursor);
  for (const result of batch.results) {
    if (result.taken) continue; // another job finished it
    if (result.refused !== undefined) {
      // A link (or a folder swapped under it) carrying a retired name: never followed or removed.
      ctx.report.skip(rel(result.name), result.refused);
    } else if (result.error === undefined) {
      ctx.report.removedEntry(rel(result.name), result.bytes ?? 0, { reason: "interrupted_deletion" });
    } else {
      ctx.report.failed(rel(path.basename(result.path)), "leftover_delete_failed");
      ctx.retryLater();
    }
  }
  if (batch.cursor !== null) ctx.continueNow();
}

async function ownersInChunks(ctx: Ctx, names: readonly string[]): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  for (let i = 0; i < names.length; i += LIMITS.discoveryChunk) {
    // Discovery stops when the worker drains or shuts down; the platform makes what this
    // job claimed (start-up included) due again at once for the next worker.
    ctx.signal.throwIfAborted();
    for (const [id, company] of await runOwners(ctx.db, names.slice(i, i + LIMITS.discoveryChunk))) {
      owners.set(id, company);
    }
    await ctx.faults.hit("native-workspace-sync.discovery-chunk");
  }
  return owners;
}

export async function prepare(ctx: Ctx): Promise<Prepared> {
  const top = await ProvenDir.top(path.join(ctx.instanceRoot, SYNC_DIR));
  if (top === null) return { top, folders: [], more: false };
  // One listing of the (large) folder for the leftovers and the run folders: the leftover pass
  // renames only `.expired-*` entries.
  const listing = await top.list();
  await finishLeftovers(ctx, top, listing);

  const after = await ctx.readCursor("folders");
  // This scope's folders after the cursor, in name order, at most one more than a batch
  // checks (to tell whether more are left), each with whether it can be removable at all.
  let mine: { name: string; mayBeRemovable: boolean }[];
  if (ctx.scope === INSTANCE_SCOPE) {
    // Deadline discovery: run state 200 folders at a time, stopping on shutdown.
    const names = runFolderNames(listing);
    const owners = await ownersInChunks(ctx, names);
    if (ctx.claimed.some((c) => c.reason === "startup")) {
      for (const company of new Set(owners.values())) ctx.deadlines.at("startup", ctx.startedAt, company);
    }
    mine = names
      .filter((name) => !owners.has(name) && (after === null || name > after))
      .sort()
      .slice(0, LIMITS.foldersPerBatch + 1)
      .map((name) => ({ name, mayBeRemovable: true })); // no run: removable once old enough
  } else {
    const judge = { now: ctx.startedAt, windowMs: ctx.config.windowMs };
    const names = runFolderNames(listing);
    const runs = await companyRunsInOrder(ctx.db, names, after, ctx.scope, LIMITS.foldersPerBatch + 1);
    mine = runs.map((run) => ({ name: run.id, mayBeRemovable: mayBeRemovable(run, judge) }));
  }

  // What this batch can examine: apply stops at the first candidate past the 50 it can lock (a
  // dry run too: it reports what the real batch would), so the folders from the 51st that can
  // be removable at all on wait for the next batch. (A folder that turns out kept only makes
  // this batch smaller.) Only the folders that cannot be removable are surveyed here.
  const batch: typeof mine = [];
  let removable = 0;
  for (const folder of mine) {
    if (batch.length >= LIMITS.foldersPerBatch) break;
    if (folder.mayBeRemovable && removable++ >= LIMITS.removalsPerBatch) break;
    batch.push(folder);
  }
  const surveys = new Map(
    (
      await surveyFolders(
        top,
        batch.filter((f) => !f.mayBeRemovable).map((f) => f.name),
        surveyOptions(ctx),
      )
    ).map((survey) => [survey.name, survey]),
  );
  const folders = batch.map(({ name }) => ({ name, survey: surveys.get(name) ?? null }));
  return { top, folders, more: mine.length > folders.length };
}

const surveyOptions = (ctx: Ctx) => ({
  signal: ctx.signal,
  each: () => ctx.faults.hit("native-workspace-sync.surveyed"),
});

/** A survey that found a real directory and walked it. */
const isFolder = (f: FolderSurvey) => f.kind === "directory" && f.stats !== null;

/** No file at all: a verdict on the run's state alone (judgeFolder checks the folder first). */
const NO_FILES = { newestMtimeMs: -Infinity };

export async function apply(ctx: Ctx, tx: Tx, prepared: Prepared): Promise<Applied> {
  const top = prepared.top;
  if (top === null) {
    await ctx.writeCursor("folders", null, tx);
    return { top, retired: [] };
  }
  // Surveys by name: those taken before the transaction, then the ones below.
  const surveys = new Map<string, FolderSurvey>();
  for (const { name, survey } of prepared.folders) if (survey !== null) surveys.set(name, survey);
  const toJudge = prepared.folders.filter((f) => f.survey === null || isFolder(f.survey));
  // 1. Judge every folder on run state read without any lock (one query, which also tells the
  //    rules whose tables nothing writes here): a folder not yet surveyed on its run's state
  //    alone. Most are kept, and a folder its run keeps is never locked.
  const { runs: states, unavailable } = await runStates(
    tx,
    toJudge.map((f) => f.name),
    ctx.config.assumeEmpty,
  );
  const judge = {
    now: ctx.startedAt,
    windowMs: ctx.config.windowMs,
    isLive: recordedProcessIsLive,
    unavailable,
  };
  const first = new Map<string, Verdict>();
  for (const { name, survey } of toJudge) {
    first.set(name, judgeFolder(survey?.stats ?? NO_FILES, states.get(name) ?? null, judge));
  }
  // 2. The run's finalization ownership lock for the candidates this batch can take (one
  //    query), held until commit, and their run state read again under it. A dry run takes
  //    it too, so it reports a folder whose lock is held as skipped, as the real run would.
  const candidates = toJudge
    .filter((f) => first.get(f.name)!.remove)
    .slice(0, LIMITS.removalsPerBatch)
    .map((f) => f.name);
  const lockable = new Set(candidates);
  const owned = await tryLockMany(tx, LOCK_NAMESPACES.nativeRunFinalization, candidates);
  const { runs: underLock } = await runStates(tx, [...owned], ctx.config.assumeEmpty);
  // 3. The folders surveyed now: each locked candidate (now that nobody else can touch it;
  //    a survey taken before the lock is taken again, as a writer holding the lock may have
  //    touched the folder since), all before the loop below judges and renames them; and those
  //    kept on their run's state that were not surveyed yet, without a lock, for the report
  //    (the folder's own reason comes first). The instance job skips a folder whose run
  //    appeared.
  const underLockNames = candidates.filter(
    (name) => owned.has(name) && (ctx.scope !== INSTANCE_SCOPE || !underLock.has(name)),
  );
  const keptNames = toJudge.filter((f) => f.survey === null && !lockable.has(f.name)).map((f) => f.name);
  const again = new Map<string, FolderSurvey>();
  const walked = await surveyFolders(top, [...underLockNames, ...keptNames], surveyOptions(ctx));
  for (const survey of walked) {
    if (lockable.has(survey.name)) {
      again.set(survey.name, survey);
      continue;
    }
    surveys.set(survey.name, survey);
    // Kept on its run's state whatever it holds; judged again for the reason to report.
    if (isFolder(survey))
      first.set(survey.name, judgeFolder(survey.stats!, states.get(survey.name) ?? null, judge));
  }

  const retired: Applied["retired"] = [];
  const renames: { id: string; name: string; identity: Identity | null; companyId: string | null }[] = [];
  let examined = 0;
  for (const { name } of prepared.folders) {
    if (ctx.signal.aborted || renames.length >= LIMITS.removalsPerBatch) break;
    // Candidates past those locked above wait for the next batch (the cursor stops here).
    if (first.get(name)?.remove && !lockable.has(name)) break;
    examined += 1;
    ctx.report.examined();
    const id = rel(name);
    const folder = surveys.get(name) ?? null;
    if (folder !== null && !reportNotAFolder(ctx, id, folder)) continue;
    const verdict = first.get(name)!;
    const seen = states.get(name) ?? null;
    if (!verdict.remove) {
      ctx.report.skip(id, verdict.reason, {
        companyId: seen?.company_id ?? null,
        bytes: folder!.stats!.allocatedBytes,
      });
      ctx.deadlines.at("retention", verdict.recheckAt);
      continue;
    }
    if (!owned.has(name)) {
      ctx.report.skip(id, "finalization_lock_held", { companyId: seen?.company_id ?? null });
      ctx.retryLater();
      continue;
    }
    const run = underLock.get(name) ?? null;
    const companyId = run?.company_id ?? null;
    if (ctx.scope === INSTANCE_SCOPE && run !== null) {
      // The run row appeared after the survey: the folder now belongs to its company's job.
      ctx.report.skip(id, "run_appeared", { companyId });
      ctx.deadlines.at("discovered", ctx.startedAt, run.company_id);
      continue;
    }
    // Judged on what the folder holds now that nobody else can touch it (surveyed above).
    const now = again.get(name)!;
    if (folder === null) {
      // First surveyed under the lock: what it is, as for any folder.
      if (!reportNotAFolder(ctx, id, now, companyId)) continue;
    } else if (now.stats === null || !sameIdentity(now.identity, folder.identity)) {
      ctx.report.skip(id, "folder_changed", { companyId });
      ctx.retryLater();
      continue;
    }
    const final = judgeFolder(now.stats!, run, judge);
    const bytes = now.stats!.allocatedBytes;
    if (!final.remove) {
      ctx.report.skip(id, final.reason, { companyId, bytes });
      ctx.deadlines.at("retention", final.recheckAt);
      continue;
    }
    ctx.report.candidate(id, bytes, { companyId, reason: final.because });
    if (!ctx.dryRun) renames.push({ id, name, identity: now.identity, companyId });
  }
  // 4. The removable folders renamed to `.expired-<UUID>`, a few at once (each its own
  //    entry, still under its run's lock), their outcomes reported in order.
  const renamed = await mapInOrder(
    renames,
    BOUNDED_WIDTH,
    async ({ name, identity }) => {
      // Between the decision and the rename: the folder can vanish here (tests only).
      await ctx.faults.hit("native-workspace-sync.before-rename");
      let to: string;
      try {
        to = await retire(top, name, ".expired", identity ?? undefined);
      } catch (error) {
        return { error };
      }
      await ctx.faults.hit("native-workspace-sync.after-rename");
      return to;
    },
    () => ctx.signal.aborted,
  );
  // Stopped before every decided rename was made: nothing of this batch is committed (what
  // was renamed is a leftover the next batch finishes).
  if (renamed.length < renames.length) ctx.signal.throwIfAborted();
  for (const [i, outcome] of renamed.entries()) {
    const { id, companyId } = renames[i]!;
    if (typeof outcome === "string") {
      retired.push({ rel: id, name: outcome, companyId });
    } else if (!(outcome.error instanceof PathRefused)) {
      ctx.report.failed(id, "rename_failed", { companyId });
      ctx.retryLater();
    } else {
      // Gone between the recheck and the rename: its bytes still get an outcome.
      const { reason } = outcome.error;
      if (reason === "missing") ctx.report.note(id, "vanished", { companyId });
      else ctx.report.skip(id, reason, { companyId });
      if (reason === "path_changed" || reason === "identity_changed") ctx.retryLater();
    }
  }

  const stoppedEarly = examined < prepared.folders.length;
  if (stoppedEarly || prepared.more) {
    await ctx.writeCursor(
      "folders",
      prepared.folders[examined - 1]?.name ?? (await ctx.readCursor("folders")),
      tx,
    );
    ctx.continueNow();
  } else {
    await ctx.writeCursor("folders", null, tx);
  }
  return { top, retired };
}

/**
 * Reports a survey that found no real directory (gone: `vanished`, another job removed it; a
 * link or anything else: kept); true when it is a folder to judge.
 */
function reportNotAFolder(ctx: Ctx, id: string, survey: FolderSurvey, companyId?: string | null): boolean {
  const extra = companyId === undefined ? {} : { companyId };
  if (survey.kind === "missing") {
    // Listed, then gone before the survey read it (another job removed it).
    ctx.report.note(id, "vanished", extra);
    return false;
  }
  if (!isFolder(survey)) {
    ctx.report.skip(id, survey.kind === "symlink" ? "symlink" : "not_a_directory", extra);
    return false;
  }
  return true;
}

export async function finish(ctx: Ctx, applied: Applied): Promise<void> {
  // A few at once, each reported as it ends.
  await mapInOrder(applied.retired, DELETES_AT_ONCE, async (item) => {
    await ctx.faults.hit("native-workspace-sync.before-delete");
    let removed: { bytes: number } | null;
    try {
      // Claimed like any leftover: another job's leftover pass may meet it first.
      removed = await claimAndRemove(applied.top!, item.name, () =>
        ctx.faults.hit("native-workspace-sync.after-claim"),
      );
    } catch {
      // An `.expired-*` name stays; the next batch's leftover pass finishes it.
      ctx.report.failed(item.rel, "delete_failed", { companyId: item.companyId });
      ctx.retryLater();
      return;
    }
    // null: another job's leftover pass deleted it, and reports it.
    if (removed !== null) ctx.report.removedEntry(item.rel, removed.bytes, { companyId: item.companyId });
  });
  if (ctx.report.candidates > 0) {
    ctx.log.info("native workspace sync folders", {
      event: "native_workspace_sync.retention",
      dryRun: ctx.dryRun,
      candidates: ctx.report.entries.filter((e) => e.outcome === "candidate").map((e) => e.id),
      candidateBytes: ctx.report.candidateBytes,
      reclaimedBytes: ctx.report.reclaimedBytes,
      skipped: ctx.report.skipped,
    });
  }
}
