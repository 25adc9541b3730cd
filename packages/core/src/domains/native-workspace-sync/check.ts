/**
 * One batch of native workspace sync retention for a scope.
 *
 * prepare (no lock): one listing of the folder; finish up to 50 interrupted deletions
 *   (`.expired-*`, own cursor); find the folders of this scope after the folder cursor
 *   (company: its runs' folders, one query; instance: folders with no run, plus start-up
 *   deadline discovery for every company that has folders); survey those this batch can
 *   examine (at most 200, and none from the 51st that can be removable at all on), a few at
 *   once.
 * apply (the job's transaction, company lock): judge every folder on its run's state read
 *   without a lock (one query); most are kept, and a kept folder's run is never locked. For
 *   the candidates (at most 50) take each run's finalization ownership lock in one query
 *   (held elsewhere: skip, retry in 15 minutes), held until commit; read their run state
 *   again and survey each folder again under it (a few at once), judge again (rules.ts), and
 *   rename a removable one to `.expired-<UUID>`. Each folder is thus decided and renamed in
 *   one transaction holding its run's lock.
 * finish (after commit): delete what was renamed, a few at once (claimed first, as leftovers
 *   are: another job's leftover pass may meet it); a failed delete stays for a later batch.
 */
import type { Dirent } from "node:fs";
import path from "node:path";
import { LOCK_NAMESPACES, tryLockMany, type Tx } from "../../db";
import {
  claimAndRemove,
  DELETES_AT_ONCE,
  finishInterruptedDeletes,
  mapInOrder,
  PathRefused,
  ProvenDir,
  retire,
  sameIdentity,
} from "../../fs";
import { INSTANCE_SCOPE } from "../../ledger";
import { recordedProcessIsLive } from "../../process/liveness";
import type { JobContext } from "../types";
import { LIMITS, SYNC_DIR, type NativeWorkspaceSyncConfig } from "./config";
import { companyRunsInOrder, runOwners, runStates } from "./queries";
import { unavailableRules } from "../sources";
import { judgeFolder, mayBeRemovable, SOURCES, type Verdict } from "./rules";
import { runFolderNames, surveyFolders, type FolderSurvey } from "./survey";

type Ctx = JobContext<NativeWorkspaceSyncConfig>;

export interface Prepared {
  /** The configured top folder, proven; null when it does not exist (nothing to do). */
  top: ProvenDir | null;
  folders: FolderSurvey[];
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
  const batch = await finishInterruptedDeletes(top, {
    prefixes: [".expired"],
    limit: LIMITS.leftoversPerBatch,
    after: await ctx.readCursor("leftovers"),
    signal: ctx.signal,
    listing,
  });
  await ctx.writeCursor("leftovers", batch.cursor);
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

async function ownersInChunks(ctx: Ctx, names: string[]): Promise<Map<string, string>> {
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
    const pending = runFolderNames(listing, after);
    const runs = await companyRunsInOrder(ctx.db, pending, ctx.scope, LIMITS.foldersPerBatch + 1);
    mine = runs.map((run) => ({ name: run.id, mayBeRemovable: mayBeRemovable(run, judge) }));
  }

  // Survey only what this batch can examine: apply stops at the first candidate past the 50
  // it can lock, so the folders from the 51st that can be removable at all on wait for the
  // next batch. (A folder that turns out kept only makes this batch smaller.)
  const batch: string[] = [];
  let removable = 0;
  for (const folder of mine) {
    if (batch.length >= LIMITS.foldersPerBatch) break;
    if (folder.mayBeRemovable && removable++ >= LIMITS.removalsPerBatch) break;
    batch.push(folder.name);
  }
  const folders = await surveyFolders(top, batch, {
    signal: ctx.signal,
    each: () => ctx.faults.hit("native-workspace-sync.surveyed"),
  });
  return { top, folders, more: mine.length > folders.length };
}

export async function apply(ctx: Ctx, tx: Tx, prepared: Prepared): Promise<Applied> {
  const top = prepared.top;
  if (top === null) {
    await ctx.writeCursor("folders", null, tx);
    return { top, retired: [] };
  }
  const unavailable = await unavailableRules(tx, SOURCES, ctx.config.assumeEmpty);
  const judge = {
    now: ctx.startedAt,
    windowMs: ctx.config.windowMs,
    isLive: recordedProcessIsLive,
    unavailable,
  };
  const isFolder = (f: FolderSurvey) => f.kind === "directory" && f.stats !== null;
  // 1. Judge every folder on run state read without any lock (one query): most are kept, and
  //    a kept folder's run is never locked.
  const states = await runStates(
    tx,
    prepared.folders.filter(isFolder).map((f) => f.name),
  );
  const first = new Map<string, Verdict>();
  for (const folder of prepared.folders.filter(isFolder)) {
    first.set(folder.name, judgeFolder(folder.stats!, states.get(folder.name) ?? null, judge));
  }
  // 2. The run's finalization ownership lock for the candidates this batch can remove (one
  //    query), held until commit, and their run state read again under it. A dry run takes
  //    it too, so it reports a folder whose lock is held as skipped, as the real run would.
  const candidates = prepared.folders
    .filter((f) => first.get(f.name)?.remove)
    .slice(0, LIMITS.removalsPerBatch)
    .map((f) => f.name);
  const lockable = new Set(candidates);
  const owned = await tryLockMany(tx, LOCK_NAMESPACES.nativeRunFinalization, candidates);
  const underLock = await runStates(tx, [...owned]);
  // Each locked folder surveyed again now that nobody else can touch it (the survey above ran
  // before the lock; a writer holding it may have touched the folder since), all before the
  // loop below judges and renames them. The instance job skips a folder whose run appeared.
  const again = new Map(
    (
      await surveyFolders(
        top,
        candidates.filter(
          (name) => owned.has(name) && (ctx.scope !== INSTANCE_SCOPE || !underLock.has(name)),
        ),
        { signal: ctx.signal },
      )
    ).map((survey) => [survey.name, survey]),
  );

  const retired: Applied["retired"] = [];
  let examined = 0;
  for (const folder of prepared.folders) {
    if (ctx.signal.aborted || retired.length >= LIMITS.removalsPerBatch) break;
    // Candidates past those locked above wait for the next batch (the cursor stops here).
    if (first.get(folder.name)?.remove && !lockable.has(folder.name)) break;
    examined += 1;
    ctx.report.examined();
    const id = rel(folder.name);
    if (folder.kind === "missing") {
      // Listed, then gone before the survey read it (another job removed it).
      ctx.report.note(id, "vanished");
      continue;
    }
    if (!isFolder(folder)) {
      ctx.report.skip(id, folder.kind === "symlink" ? "symlink" : "not_a_directory");
      continue;
    }
    const verdict = first.get(folder.name)!;
    const seen = states.get(folder.name) ?? null;
    if (!verdict.remove) {
      ctx.report.skip(id, verdict.reason, {
        companyId: seen?.company_id ?? null,
        bytes: folder.stats!.allocatedBytes,
      });
      ctx.deadlines.at("retention", verdict.recheckAt);
      continue;
    }
    if (!owned.has(folder.name)) {
      ctx.report.skip(id, "finalization_lock_held", { companyId: seen?.company_id ?? null });
      ctx.retryLater();
      continue;
    }
    const run = underLock.get(folder.name) ?? null;
    const companyId = run?.company_id ?? null;
    if (ctx.scope === INSTANCE_SCOPE && run !== null) {
      // The run row appeared after the survey: the folder now belongs to its company's job.
      ctx.report.skip(id, "run_appeared", { companyId });
      ctx.deadlines.at("discovered", ctx.startedAt, run.company_id);
      continue;
    }
    // Judged on what the folder holds now that nobody else can touch it (surveyed above).
    const now = again.get(folder.name)!;
    if (now.stats === null || !sameIdentity(now.identity, folder.identity)) {
      ctx.report.skip(id, "folder_changed", { companyId });
      ctx.retryLater();
      continue;
    }
    const final = judgeFolder(now.stats, run, judge);
    const bytes = now.stats.allocatedBytes;
    if (!final.remove) {
      ctx.report.skip(id, final.reason, { companyId, bytes });
      ctx.deadlines.at("retention", final.recheckAt);
      continue;
    }
    ctx.report.candidate(id, bytes, { companyId, reason: final.because });
    if (ctx.dryRun) continue;
    // Between the decision and the rename: the folder can vanish here (tests only).
    await ctx.faults.hit("native-workspace-sync.before-rename");
    let to: string;
    try {
      to = await retire(top, folder.name, ".expired", folder.identity ?? undefined);
    } catch (error) {
      if (!(error instanceof PathRefused)) {
        ctx.report.failed(id, "rename_failed", { companyId });
        ctx.retryLater();
      } else {
        // Gone between the recheck and the rename: its bytes still get an outcome.
        if (error.reason === "missing") ctx.report.note(id, "vanished", { companyId });
        else ctx.report.skip(id, error.reason, { companyId });
        if (error.reason === "path_changed" || error.reason === "identity_changed") ctx.retryLater();
      }
      continue;
    }
    retired.push({ rel: id, name: to, companyId });
    await ctx.faults.hit("native-workspace-sync.after-rename");
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
