/**
 * Filesystem reads of the session backups walk, outside any lock: which session
 * directories exist, each one's control-plane state (at most 4 MB, never through a
 * symlink), its `failover-backups/` (the `current` copy with identity, allocated bytes and
 * when it was written; `.retiring-*` and `.expired-*` leftovers) and whether a cleanup
 * activation is pending in it. Nothing else in a session directory is read.
 */
import { lstat, readFile } from "node:fs/promises";
import path from "node:path";
import { errnoCode } from "@reclaim/shared";
import { z } from "zod";
import {
  entryKind,
  identityOf,
  names,
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
  QUARANTINE_DIR,
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
}

export interface SessionSurvey {
  name: string;
  path: string;
  kind: EntryKind;
  state: StateRead;
  /** `failover-backups/current`, or null when there is none. */
  current: CopySurvey | null;
  /** Absolute paths of `failover-backups/.retiring-*` and `.expired-*`. */
  retiring: string[];
  expired: string[];
  cleanupActivation: boolean;
}

/** Session directory names (sorted); `quarantine` and dot-names are not sessions. */
export async function listSessionNames(root: string): Promise<string[]> {
  return (await names(root)).filter((n) => n !== QUARANTINE_DIR && !n.startsWith(".")).sort();
}

export async function readControlPlaneState(sessionDir: string): Promise<StateRead> {
  const file = path.join(sessionDir, CONTROL_PLANE_STATE);
  let stat;
  try {
    stat = await lstat(file);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return { status: "missing" };
    return { status: "unreadable" };
  }
  if (!stat.isFile()) return { status: "unreadable" };
  if (stat.size > MAX_CONTROL_PLANE_STATE_BYTES) return { status: "too_large" };
  try {
    const parsed = controlPlaneState.safeParse(JSON.parse(await readFile(file, "utf8")));
    return parsed.success ? { status: "ok", state: parsed.data } : { status: "unreadable" };
  } catch {
    return { status: "unreadable" };
  }
}

async function manifestCompletedAtMs(copy: string): Promise<number> {
  try {
    const file = path.join(copy, "manifest.json");
    if (!(await lstat(file)).isFile()) return 0;
    const at = Date.parse(
      (JSON.parse(await readFile(file, "utf8")) as { completedAt?: unknown }).completedAt as string,
    );
    return Number.isFinite(at) ? at : 0;
  } catch {
    return 0;
  }
}

export async function surveyCopy(copy: string, signal?: AbortSignal): Promise<CopySurvey | null> {
  const kind = await entryKind(copy);
  if (kind === "missing") return null;
  if (kind !== "directory") return { path: copy, kind, identity: null, allocatedBytes: 0, writtenAtMs: 0 };
  try {
    const identity = await identityOf(copy);
    const stats = await treeStats(copy, signal);
    return {
      path: copy,
      kind,
      identity,
      allocatedBytes: stats.allocatedBytes,
      writtenAtMs: Math.max(stats.newestMtimeMs, await manifestCompletedAtMs(copy)),
    };
  } catch (error) {
    // Replaced by a newer copy while it was read (Paperclip writes one after every turn).
    if (errnoCode(error) === "ENOENT") return null;
    throw error;
  }
}

/** What `failover-backups/` holds: whether `current` exists, and the retired names. */
export interface BackupsListing {
  current: boolean;
  /** Absolute paths of `.retiring-*` and `.expired-*`, sorted. */
  retiring: string[];
  expired: string[];
}

/**
 * Lists `<session>/failover-backups/`, never through a symlink (the session directory and
 * the folder must both be real directories, or it lists nothing). The survey reads it
 * without a lock; a batch reads it again under the lock before it finishes leftovers.
 */
export async function listBackups(sessionDir: string): Promise<BackupsListing> {
  const backups = path.join(sessionDir, BACKUPS_DIR);
  const real = (await entryKind(sessionDir)) === "directory" && (await entryKind(backups)) === "directory";
  const found = real ? await names(backups) : [];
  const retired = (prefix: string) =>
    found
      .filter((n) => retiredPrefixOf(n) === prefix)
      .sort()
      .map((n) => path.join(backups, n));
  return { current: found.includes(CURRENT), retiring: retired(".retiring"), expired: retired(".expired") };
}

export async function surveySession(
  root: string,
  name: string,
  signal?: AbortSignal,
): Promise<SessionSurvey> {
  const dir = path.join(root, name);
  const kind = await entryKind(dir);
  const base = { name, path: dir, kind };
  if (kind !== "directory") {
    return {
      ...base,
      state: { status: "missing" },
      current: null,
      retiring: [],
      expired: [],
      cleanupActivation: false,
    };
  }
  const backups = await listBackups(dir);
  return {
    ...base,
    state: await readControlPlaneState(dir),
    current: backups.current ? await surveyCopy(path.join(dir, BACKUPS_DIR, CURRENT), signal) : null,
    retiring: backups.retiring,
    expired: backups.expired,
    cleanupActivation: (await names(dir)).some((n) => n.startsWith(CLEANUP_ACTIVATION_PREFIX)),
  };
}

/** How many entries a session counts toward the batch limit: itself and its leftovers. */
export const entriesOf = (session: SessionSurvey) => 1 + session.retiring.length + session.expired.length;
