/**
 * One batch of skill version cache retention.
 *
 * Instance scope (the hourly sweep, first due at start-up): find the companies that have
 * `skills/<company>/` and make each company's job due now; ask for itself again in an hour.
 *
 * Company scope:
 * prepare (no lock): list up to 50 interrupted trash removals (`.trash-*`, own cursor), list
 *   the company's `<skill>/<version>` directories and survey up to 50 of them from the
 *   version cursor (validation, identity, allocated bytes, last-use records).
 * apply (the job's transaction, holding the company skill lock that Paperclip's
 *   preparation and pin persistence also take): read current versions and pins for the
 *   whole batch in one query; start the observation period of an installation without
 *   last-use records; judge each version (rules.ts), recheck its last use and identity,
 *   and rename an evictable one to a unique `.trash-<UUID>` sibling (a dry run renames
 *   nothing, and makes no recheck).
 * finish (after commit): delete the trash, interrupted leftovers included, in a separate
 *   transaction holding the trash lock (not the company lock, so preparation can restore a
 *   version meanwhile). A `.trash-*` name never collides with a version id, so a version
 *   materialized again after the rename is never what gets deleted.
 */
import path from "node:path";
import { errnoCode } from "@reclaim/shared";
import { MINUTE_MS } from "../../clock";
import { tryLock, type Tx } from "../../db";
import { mapInOrder, PathRefused, removeRetired, retire, sameIdentity, type ProvenDir } from "../../fs";
import { INSTANCE_SCOPE } from "../../ledger";
import type { JobContext } from "../types";
import {
  ACCESS_DIR,
  LIMITS,
  LOCKS,
  OBSERVATION_MARKER,
  SKILLS_DIR,
  SWEEP_INTERVAL_MS,
  VERSIONS_DIR,
  type SkillVersionCachesConfig,
} from "./config";
import { versionFacts } from "./queries";
import { StorageKey } from "@reclaim/shared";
import { storageFor } from "../../storage";
import { judgeRebuild, judgeVersion, type StorageProbe, type VersionFacts } from "./rules";
import {
  confirmSurveyed,
  lastUseRecordMs,
  listCompanies,
  listCompany,
  observationStartMs,
  openCompany,
  surveyVersion,
  type CompanyTree,
  type VersionSurvey,
} from "./survey";

type Ctx = JobContext<SkillVersionCachesConfig>;

interface Trash {
  /** Report id of the version (or of the leftover) it was. */
  rel: string;
  /** The proven skill directory it is in, and its `.trash-*` name there. */
  dir: ProvenDir;
  name: string;
  leftover: boolean;
}

export interface Prepared {
  /** null: nothing to judge (no company directory, or a level of it refused). */
  company: CompanyTree | null;
  versions: VersionSurvey[];
  /** Versions of this company beyond this batch. */
  more: boolean;
  leftovers: Trash[];
  observationStartMs: number | null;
}

export interface Applied {
  trash: Trash[];
}

const rel = (companyId: string, key: string) => `${SKILLS_DIR}/${companyId}/${VERSIONS_DIR}/${key}`;

/** Report id of a path below the instance root. */
const idOf = (ctx: Ctx, at: string) => path.relative(ctx.instanceRoot, at);

async function fanOut(ctx: Ctx): Promise<void> {
  const { companies, links } = await listCompanies(ctx.instanceRoot);
  // A company directory that is a link is never swept: said once an hour, in the fan-out's report.
  for (const link of links) ctx.report.skip(`${SKILLS_DIR}/${link}`, "symlink", { companyId: link });
  // A diagnosis of the instance scope changes nothing: it only says which companies have caches.
  if (ctx.kind !== "deadline") return;
  for (const company of companies) ctx.deadlines.at("sweep", ctx.startedAt, company);
  ctx.deadlines.at("hourly", ctx.later(SWEEP_INTERVAL_MS));
}

async function listLeftovers(
  ctx: Ctx,
  tree: CompanyTree,
  trash: { key: string; symlink: boolean }[],
): Promise<Trash[]> {
  if (ctx.dryRun) return [];
  const after = await ctx.readCursor("trash");
  const start = after === null ? 0 : trash.findIndex((t) => t.key > after);
  const todo = start < 0 ? [] : trash.slice(start, start + LIMITS.trashPerBatch);
  const reachedEnd = start < 0 || start + todo.length >= trash.length;
  await ctx.writeCursor("trash", reachedEnd ? null : (todo.at(-1)?.key ?? null));
  if (!reachedEnd) ctx.continueNow();
  const leftovers: Trash[] = [];
  for (const { key, symlink } of todo) {
    const [skillId, name] = key.split("/") as [string, string];
    // A link carrying a trash name: never followed, never removed.
    if (symlink) ctx.report.skip(rel(ctx.scope, key), "symlink", { companyId: ctx.scope });
    else
      leftovers.push({ rel: rel(ctx.scope, key), dir: tree.skills.get(skillId)!.dir, name, leftover: true });
  }
  return leftovers;
}

export async function prepare(ctx: Ctx): Promise<Prepared> {
  const empty: Prepared = {
    company: null,
    versions: [],
    more: false,
    leftovers: [],
    observationStartMs: null,
  };
  if (ctx.scope === INSTANCE_SCOPE) {
    await fanOut(ctx);
    return empty;
  }
  const tree = await openCompany(ctx.instanceRoot, ctx.scope);
  try {
    if (tree.company === null) return empty;
    const after = await ctx.readCursor("versions");
    // A dry run finishes no leftovers: it lists only the skills this batch's versions are in.
    const listing = await listCompany(
      tree,
      ctx.dryRun ? { after, limit: LIMITS.versionsPerBatch } : undefined,
    );
    const leftovers = await listLeftovers(ctx, tree, listing.trash);
    const keys = listing.keys;
    // Between the listing and the survey: a version can vanish here (tests only).
    await ctx.faults.hit("skill-version-caches.listed");
    const start = after === null ? 0 : keys.findIndex((k) => k > after);
    const slice = start < 0 ? [] : keys.slice(start, start + LIMITS.versionsPerBatch);
    // A few versions surveyed at once; a cancellation stops new ones and keeps the surveyed prefix.
    const versions: VersionSurvey[] = await mapInOrder(
      slice,
      LIMITS.fsWidth,
      (key) => surveyVersion(tree, key, ctx.signal),
      () => ctx.signal.aborted,
    );
    await confirmSurveyed(versions);
    return {
      company: tree,
      versions,
      more: start >= 0 && start + versions.length < keys.length,
      leftovers,
      observationStartMs: await observationStartMs(tree),
    };
  } catch (error) {
    if (!(error instanceof PathRefused)) throw error;
    // A level was swapped while it was read: nothing read through it is judged.
    tree.refused.push(error);
    ctx.retryLater();
    return empty;
  } finally {
    for (const refused of tree.refused)
      ctx.report.skip(idOf(ctx, refused.at), refused.reason, { companyId: ctx.scope });
  }
}

/**
 * An installation without last-use records gets one full grace window from the first
 * sweep that sees it; a dry run reports as if it started now but does not start it.
 */
async function startObservation(ctx: Ctx, tree: CompanyTree, known: number | null): Promise<number> {
  if (known !== null) return known;
  const now = ctx.startedAt;
  if (!ctx.dryRun) {
    // Under the company lock; the marker's modification time is the start (the job's clock).
    // Created in the proven company directory, never through a link (a refusal fails the batch).
    const access = (tree.access ??= await tree.company!.ensureDir(ACCESS_DIR));
    try {
      await access.createFile(OBSERVATION_MARKER, `${now.toISOString()}\n`, now);
    } catch (error) {
      if (errnoCode(error) !== "EEXIST") throw error;
      // Started meanwhile by another sweep: its start counts.
      const started = (await access.lstatEntry(OBSERVATION_MARKER))?.mtimeMs;
      if (started !== undefined) return started;
      throw error;
    }
  }
  return now.getTime();
}

/**
 * What the configured storage says of a version's durable package, now (null: not a storage
 * package). Any failure to ask is `unavailable`: unreachable storage keeps the cache.
 */
async function probePackage(ctx: Ctx, companyId: string, row: VersionFacts): Promise<StorageProbe | null> {
  if (row.package_kind !== "storage" || !row.package_storage_key) return null;
  let key: StorageKey;
  try {
    key = StorageKey.of(companyId, row.package_storage_key);
  } catch {
    return { state: "invalid_key" };
  }
  try {
    const head = await storageFor(ctx.config.storage).head(key);
    return head === null ? { state: "missing" } : { state: "present", byteSize: head.byteSize };
  } catch {
    return { state: "unavailable" };
  }
}

export async function apply(ctx: Ctx, tx: Tx, prepared: Prepared): Promise<Applied> {
  const trash: Trash[] = [...prepared.leftovers];
  const company = prepared.company;
  if (company === null || ctx.companyId === null) return { trash };

  const facts = await versionFacts(
    tx,
    ctx.companyId,
    prepared.versions,
    ctx.config.keep,
    ctx.config.assumeEmpty,
  );
  const observationStart =
    prepared.versions.length > 0
      ? await startObservation(ctx, company, prepared.observationStartMs)
      : ctx.startedAt.getTime();
  const judge = {
    now: ctx.startedAt,
    graceMs: ctx.config.graceMs,
    observationStartMs: observationStart,
    unavailable: facts.unavailable,
  };
  const companyId = ctx.companyId;
  let examined = 0;
  let recheckAt: Date | null = null;

  for (const entry of prepared.versions) {
    if (ctx.signal.aborted) break;
    examined += 1;
    ctx.report.examined();
    await ctx.faults.hit("skill-version-caches.entry-examined");
    const id = rel(companyId, entry.key);
    if (entry.kind === "missing") {
      // Listed, then gone before the survey read it (evicted elsewhere, rebuilt): the
      // diagnosis still lists every entry it looked at.
      ctx.report.note(id, "vanished", { companyId });
      continue;
    }
    const row = facts.versions.get(entry.key) ?? null;
    let verdict = judgeVersion(facts.company, entry, row, judge);
    if (verdict.evict && !ctx.dryRun) {
      // Current versions and pins were read under this lock; last use and the directory
      // itself are files Paperclip may have touched since the survey: read them again before
      // the rename. A dry run renames nothing: it reports the survey's reading, judged
      // against this lock's facts, without the recheck that guards the rename.
      let now, lastUse;
      try {
        // Both at once (independent lstats); a refused record folder wins, as if read first.
        const [dir, record] = await Promise.allSettled([
          entry.in.dir.lstatEntry(entry.versionId),
          lastUseRecordMs(company, entry.in, entry.versionId),
        ]);
        if (record.status === "rejected") throw record.reason;
        if (dir.status === "rejected") throw dir.reason;
        now = dir.value;
        lastUse = record.value;
      } catch (error) {
        if (!(error instanceof PathRefused)) throw error;
        // A record folder planted as a link (or swapped) since the survey: kept, looked at again.
        ctx.report.skip(id, error.reason === "symlink" ? "symlink" : "path_changed", { companyId });
        ctx.retryLater();
        continue;
      }
      if (now === null || !sameIdentity({ dev: now.dev, ino: now.ino }, entry.identity)) {
        ctx.report.skip(id, "directory_changed", { companyId });
        ctx.retryLater();
        continue;
      }
      verdict = judgeVersion(facts.company, { ...entry, lastUseRecordMs: lastUse }, row, judge);
    }
    if (!verdict.evict) {
      ctx.report.skip(id, verdict.reason, { companyId, bytes: entry.allocatedBytes });
      if (verdict.recheckAt && (recheckAt === null || verdict.recheckAt < recheckAt))
        recheckAt = verdict.recheckAt;
      continue;
    }
    // Only a version that can be rebuilt loses its cache (a dry run asks too, as the real run would).
    const unrebuildable = row?.version_exists
      ? judgeRebuild(row, await probePackage(ctx, companyId, row))
      : null;
    if (unrebuildable !== null) {
      ctx.report.skip(id, unrebuildable, { companyId, bytes: entry.allocatedBytes });
      if (unrebuildable === "storage_unavailable") ctx.retryLater();
      continue;
    }
    ctx.report.candidate(id, entry.allocatedBytes, { companyId, reason: verdict.because });
    if (ctx.dryRun) continue;
    let to: string;
    try {
      to = await retire(entry.in.dir, entry.versionId, ".trash", entry.identity ?? undefined);
    } catch (error) {
      if (!(error instanceof PathRefused)) throw error;
      // Gone since the recheck (`vanished`), or replaced (`directory_changed`, looked at again).
      if (error.reason === "identity_changed" || error.reason === "path_changed") {
        ctx.report.skip(id, error.reason === "path_changed" ? "path_changed" : "directory_changed", {
          companyId,
        });
        ctx.retryLater();
      } else {
        if (error.reason === "missing") ctx.report.note(id, "vanished", { companyId });
        else ctx.report.skip(id, error.reason, { companyId });
      }
      continue;
    }
    trash.push({ rel: id, dir: entry.in.dir, name: to, leftover: false });
    await ctx.faults.hit("skill-version-caches.after-trash-rename");
  }

  if (recheckAt !== null) ctx.deadlines.at("retention", recheckAt);
  const stoppedEarly = examined < prepared.versions.length;
  if (stoppedEarly || prepared.more) {
    await ctx.writeCursor(
      "versions",
      prepared.versions[examined - 1]?.key ?? (await ctx.readCursor("versions")),
      tx,
    );
    ctx.continueNow();
  } else {
    await ctx.writeCursor("versions", null, tx);
  }
  return { trash };
}

async function deleteTrash(ctx: Ctx, items: Trash[]): Promise<void> {
  if (items.length === 0 || ctx.companyId === null) return;
  const companyId = ctx.companyId;
  // One transaction for the batch's trash: the trash lock, never the company lock, so
  // Paperclip's preparation can restore a version while this deletes.
  await ctx.db.$transaction(
    async (tx) => {
      if (!(await tryLock(tx, LOCKS.trash, companyId))) {
        for (const item of items) ctx.report.skip(item.rel, "trash_lock_held", { companyId });
        ctx.retryLater();
        return;
      }
      for (const item of items) {
        await ctx.faults.hit("skill-version-caches.before-trash-delete");
        try {
          const bytes = await removeRetired(item.dir, item.name);
          ctx.report.removedEntry(item.rel, bytes, {
            companyId,
            ...(item.leftover ? { reason: "interrupted_trash" } : {}),
          });
        } catch (error) {
          // A link is never followed or removed; a skill directory swapped since is looked at again.
          if (error instanceof PathRefused && error.reason === "symlink") {
            ctx.report.skip(item.rel, "symlink", { companyId });
            continue;
          }
          ctx.report.failed(item.rel, "trash_delete_failed", { companyId });
          ctx.retryLater();
        }
      }
    },
    { timeout: 30 * MINUTE_MS },
  );
}

export async function finish(ctx: Ctx, applied: Applied): Promise<void> {
  await deleteTrash(ctx, applied.trash);
  if (ctx.report.candidates > 0 || ctx.report.removed > 0) {
    ctx.log.info("skill version caches", {
      event: "skill_version_caches.retention",
      companyId: ctx.companyId,
      dryRun: ctx.dryRun,
      candidates: ctx.report.entries.filter((e) => e.outcome === "candidate").map((e) => e.id),
      candidateBytes: ctx.report.candidateBytes,
      reclaimedBytes: ctx.report.reclaimedBytes,
      evicted: ctx.report.removed,
      skipped: ctx.report.skipped,
    });
  }
}
