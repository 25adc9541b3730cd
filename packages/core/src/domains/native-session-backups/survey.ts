/**
 * Filesystem reads of the session backups walk, outside any lock: which session
 * directories exist, each one's control-plane state (at most 4 MB, never through a
 * symlink), its `failover-backups/` (the `current` copy with identity, allocated bytes and
 * when it was written; `.retiring-*` and `.expired-*` leftovers) and whether a cleanup
 * activation is pending in it. Nothing else in a session directory is read.
 *
 * The sessions root is taken as configured; the session directory and `failover-backups` are
 * proven real directories before anything in them is read (fs/proven-dir.ts). A level that is
 * a link is the session's `refused` level: reported with its reason, everything below it kept.
 */
import type { Dirent } from "node:fs";
import path from "node:path";
import { errnoCode, readFileBounded, type BoundedRead } from "@reclaim/shared";
import { z } from "zod";
import {
  claimantIsLive,
  fromListing,
  kindOf,
  PathRefused,
  ProvenDir,
  retiredPrefixOf,
  treeStats,
  type EntryKind,
  type Identity,
} from "../../fs";
import {
  BACKUPS_DIR,
  CLEANUP_ACTIVATION_PREFIX,
  CONTROL_PLANE_STATE,
  CURRENT,
  MAX_CONTROL_PLANE_STATE_BYTES,
  MAX_COPY_MANIFEST_BYTES,
  QUARANTINE_DIR,
  SESSIONS_DIR,
} from "./config";

/**
 * `<session>/control-plane.json`, written by the Paperclip server when it opens the session:
 * the company, the native session id runs record in `session_id_before/after`, and the runs
 * and issues it knows of (runs recorded before the session id was, issues without a run).
 */
const controlPlaneState = z.object({
  companyId: z.uuid(),
  sessionId: z.string().min(1),
  runIds: z.array(z.uuid()).optional(),
  issueIds: z.array(z.uuid()).optional(),
});

export type ControlPlaneState = z.infer<typeof controlPlaneState>;

export type StateRead =
  { status: "ok"; state: ControlPlaneState } | { status: "missing" | "unreadable" | "too_large" };

export interface CopySurvey {
  path: string;
  kind: EntryKind;
  identity: Identity | null;
  allocatedBytes: number;
  /** When the copy was last written: its newest entry, or its manifest's completedAt if later. */
  writtenAtMs: number;
  /**
   * Its `manifest.json`: absent (older copies: the entries' times alone say when it was
   * written), or there but not readable safely (a link, not a file, over 1 MiB): the copy is
   * then kept, since when it was written cannot be known.
   */
  manifest: "ok" | "absent" | "unreadable";
}

export interface SessionSurvey {
  name: string;
  path: string;
  kind: EntryKind;
  /** The proven session directory and its `failover-backups` (null: not there, or refused). */
  dir: ProvenDir | null;
  backups: ProvenDir | null;
  /** The level that was refused (the session directory or `failover-backups`), if any. */
  refused: PathRefused | null;
  state: StateRead;
  /** `failover-backups/current`, or null when there is none. */
  current: CopySurvey | null;
  /** Names of `failover-backups/.retiring-*` and `.expired-*` (links among them included). */
  retiring: string[];
  expired: string[];
  cleanupActivation: boolean;
}

/** The configured top folder, `<instance>/runtime/paperclip-runner/durable-sessions`. */
export function sessionsTop(instanceRoot: string): Promise<ProvenDir | null> {
  return ProvenDir.top(path.join(instanceRoot, SESSIONS_DIR));
}

/**
 * Session directory names (sorted, once per listing: fs/listings.ts); `quarantine` and
 * dot-names are not sessions.
 */
export async function listSessionNames(top: ProvenDir | null): Promise<readonly string[]> {
  return fromListing((await top?.list()) ?? [], "native-session-backups sessions", (entries) =>
    entries
      .map((entry) => entry.name)
      .filter((n) => n !== QUARANTINE_DIR && !n.startsWith("."))
      .sort(),
  );
}

/** The control-plane state, read without following a link and only up to 4 MB. */
export async function readControlPlaneState(session: ProvenDir): Promise<StateRead> {
  return stateOf(() => session.readFile(CONTROL_PLANE_STATE, MAX_CONTROL_PLANE_STATE_BYTES));
}

/** What a read of the control-plane state says; any failure of the read: unreadable. */
async function stateOf(read: () => Promise<BoundedRead>): Promise<StateRead> {
  let got: BoundedRead;
  try {
    got = await read();
  } catch {
    return { status: "unreadable" };
  }
  if (got.status === "missing" || got.status === "too_large") return { status: got.status };
  if (got.status !== "ok") return { status: "unreadable" };
  try {
    const parsed = controlPlaneState.safeParse(JSON.parse(got.data.toString("utf8")));
    return parsed.success ? { status: "ok", state: parsed.data } : { status: "unreadable" };
  } catch {
    return { status: "unreadable" };
  }
}

/** The copy's manifest and its `completedAt` (0 when it has none, or not a date). */
async function readManifest(
  copy: ProvenDir,
): Promise<{ manifest: CopySurvey["manifest"]; completedAtMs: number }> {
  // Never through a link, at most 1 MiB; the copy is confirmed once after the walk and this read.
  const read = await readFileBounded(copy.join("manifest.json"), MAX_COPY_MANIFEST_BYTES);
  if (read.status === "missing") return { manifest: "absent", completedAtMs: 0 };
  if (read.status !== "ok") return { manifest: "unreadable", completedAtMs: 0 };
  try {
    const parsed = JSON.parse(read.data.toString("utf8")) as { completedAt?: unknown } | null;
    const at = Date.parse(parsed?.completedAt as string);
    return { manifest: "ok", completedAtMs: Number.isFinite(at) ? at : 0 };
  } catch {
    return { manifest: "ok", completedAtMs: 0 };
  }
}

/** The copy `name` in the proven `failover-backups` (null when it is not there). */
export async function surveyCopy(
  backups: ProvenDir,
  name: string,
  signal?: AbortSignal,
): Promise<CopySurvey | null> {
  const at = backups.join(name);
  const info = await backups.lstatEntry(name);
  const kind = kindOf(info);
  if (kind === "missing") return null;
  if (kind !== "directory")
    return { path: at, kind, identity: null, allocatedBytes: 0, writtenAtMs: 0, manifest: "absent" };
  try {
    const copy = backups.childFrom(name, info!);
    const stats = await treeStats(at, signal, info!);
    const { manifest, completedAtMs } = await readManifest(copy);
    // The walk and the manifest read went below the copy by path: it must still be the copy
    // proven (one lstat: any level above replaced by a link leads the path elsewhere).
    await copy.confirm();
    return {
      path: at,
      kind,
      identity: copy.identity,
      allocatedBytes: stats.allocatedBytes,
      writtenAtMs: Math.max(stats.newestMtimeMs, completedAtMs),
      manifest,
    };
  } catch (error) {
    // Replaced by a newer copy while it was read (Paperclip writes one after every turn), or
    // `failover-backups` swapped: nothing judged from what was read (no copy: kept).
    if (errnoCode(error) === "ENOENT" || error instanceof PathRefused) return null;
    throw error;
  }
}

/** What `failover-backups/` holds: whether `current` exists, and the retired names. */
export interface BackupsListing {
  current: boolean;
  /** Names of `.retiring-*` and `.expired-*`, sorted. */
  retiring: string[];
  expired: string[];
}

/**
 * Lists the proven `failover-backups/`. The survey reads it without a lock; a batch reads it
 * again under the lock before it finishes leftovers.
 */
export async function listBackups(backups: ProvenDir | null): Promise<BackupsListing> {
  return backups === null ? backupsListing(null, []) : backupsListing(backups, await backups.list());
}

function backupsListing(backups: ProvenDir | null, entries: readonly Dirent[]): BackupsListing {
  const found = entries.map((entry) => entry.name).sort();
  return {
    current: found.includes(CURRENT),
    retiring: found.filter((n) => retiredPrefixOf(n) === ".retiring"),
    // A tree another job has claimed and is deleting is no leftover (retire.ts).
    expired: found.filter((n) => retiredPrefixOf(n) === ".expired" && !claimantIsLive(backups!, n)),
  };
}

/**
 * One session directory, in as few syscalls as its rules allow (this is most of a batch's
 * filesystem work): the session directory and `failover-backups` are each proven settled
 * (fs/proven-dir.ts: the level's lstat, then a confirm of its parent) and read at once, by
 * path: one listing of the session directory says whether the state, `failover-backups` and
 * a cleanup activation are there; one listing of `failover-backups`; `current`'s walk ends
 * with a confirm of the copy (surveyCopy). Then one confirm of the deepest settled directory
 * (`failover-backups`, or the session directory): every read went through its levels, so a
 * level swapped for a link since it was proven leads that path elsewhere and the confirm
 * fails. Nothing read is used then: the session is `refused` at the first level that changed
 * (every level checked again; `path_changed` at the deepest when all are back), and kept.
 * Every level was re-proved around each read until 2026-12-03 (34 syscalls a session, 26 now).
 */
export async function surveySession(
  top: ProvenDir,
  name: string,
  signal?: AbortSignal,
): Promise<SessionSurvey> {
  const at = top.join(name);
  const kept = (
    kind: EntryKind,
    parts: { dir?: ProvenDir | null; refused?: PathRefused | null } = {},
  ): SessionSurvey => ({
    name,
    path: at,
    kind,
    dir: parts.dir ?? null,
    backups: null,
    refused: parts.refused ?? null,
    state: { status: "missing" },
    current: null,
    retiring: [],
    expired: [],
    cleanupActivation: false,
  });
  let dir: ProvenDir | null;
  try {
    dir = await top.settledChild(name);
  } catch (error) {
    if (!(error instanceof PathRefused)) throw error;
    return kept(error.reason === "symlink" ? "symlink" : "other", { refused: error });
  }
  if (dir === null) return kept("missing");
  let deepest = dir;
  try {
    const entries = await dir.listUnconfirmed();
    const listed = (n: string) => entries.some((entry) => entry.name === n);
    const state = listed(CONTROL_PLANE_STATE)
      ? await stateOf(() => dir.readFileUnconfirmed(CONTROL_PLANE_STATE, MAX_CONTROL_PLANE_STATE_BYTES))
      : ({ status: "missing" } as const);
    const backups = listed(BACKUPS_DIR) ? await dir.settledChild(BACKUPS_DIR) : null;
    deepest = backups ?? dir;
    const listing = backupsListing(backups, (await backups?.listUnconfirmed()) ?? []);
    const current = listing.current && backups ? await surveyCopy(backups, CURRENT, signal) : null;
    // After every read, and after `current` was proven through it.
    await deepest.confirm();
    return {
      name,
      path: at,
      kind: "directory",
      dir,
      backups,
      refused: null,
      state,
      current,
      retiring: listing.retiring,
      expired: listing.expired,
      cleanupActivation: entries.some((entry) => entry.name.startsWith(CLEANUP_ACTIVATION_PREFIX)),
    };
  } catch (error) {
    if (!(error instanceof PathRefused)) throw error;
    // Removed meanwhile (the session directory or `failover-backups`): no copy to judge.
    if (error.reason === "missing") return kept("directory", { dir });
    // A level refused on the way (`failover-backups` a link), or swapped while it was read.
    if (error.reason === "symlink" || error.reason === "not_a_directory")
      return kept("directory", { dir, refused: error });
    return kept("directory", { dir, refused: await changedLevel(deepest, error) });
  }
}

/** The first level of `dir` that is not what was proven (every level checked), else `fallback`. */
async function changedLevel(dir: ProvenDir, fallback: PathRefused): Promise<PathRefused> {
  try {
    await dir.recheck();
  } catch (error) {
    if (error instanceof PathRefused) return error;
    throw error;
  }
  return new PathRefused("path_changed", fallback.at);
}

/** The state of the session `name` for a company's diagnosis (missing when it is not a real directory). */
export async function sessionState(top: ProvenDir, name: string): Promise<StateRead> {
  let dir: ProvenDir | null;
  try {
    dir = await top.child(name);
  } catch (error) {
    if (error instanceof PathRefused) return { status: "missing" };
    throw error;
  }
  return dir === null ? { status: "missing" } : readControlPlaneState(dir);
}

/** How many entries a session counts toward the batch limit: itself and its leftovers. */
export const entriesOf = (session: SessionSurvey) => 1 + session.retiring.length + session.expired.length;
