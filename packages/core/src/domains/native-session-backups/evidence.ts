/**
 * The evidence native sessions leave under the sessions root, read from the filesystem
 * only (this part never queries the database), never through a symlink: a session
 * directory, `continuity-breaks` or `quarantine` that is a link is not walked at all, and
 * the directories above an entry are checked again right before it is renamed.
 *   <session>/continuity-breaks/<epoch ms>-<UUID>/           nothing reads these again
 *   quarantine/<session>.<reason>.<epoch ms>.<pid>.<UUID>/   recovery and failed-run retry consult these
 *   quarantine/<session>.identity_indeterminate.cleanup.<UUID>  native cleanup's, referenced from recovery history: kept
 * plus `.expired-<UUID>` leftovers of interrupted deletions in either folder.
 */
import { lstat } from "node:fs/promises";
import path from "node:path";
import { errnoCode } from "@reclaim/shared";
import { entryKind, names, retiredPrefixOf, treeStats, UUID_PATTERN, type EntryKind } from "../../fs";
import { CONTINUITY_BREAKS_DIR, QUARANTINE_DIR } from "./config";

const ARCHIVE = new RegExp(`^(\\d+)-${UUID_PATTERN}$`);
const QUARANTINED = new RegExp(`^(.+)\\.([^.]+)\\.(\\d+)\\.(\\d+)\\.${UUID_PATTERN}$`);
const CLEANUP = new RegExp(`^(.+)\\.identity_indeterminate\\.cleanup\\.${UUID_PATTERN}$`);

export type EvidenceName =
  | { type: "archive" | "quarantine"; session: string; epochMs: number }
  | { type: "cleanup"; session: string }
  | { type: "leftover" }
  | { type: "unrecognized" };

export function parseEvidenceName(
  kind: "continuity_break" | "quarantine",
  name: string,
  session?: string,
): EvidenceName {
  if (retiredPrefixOf(name) === ".expired") return { type: "leftover" };
  if (kind === "continuity_break") {
    const match = ARCHIVE.exec(name);
    return match
      ? { type: "archive", session: session!, epochMs: Number(match[1]) }
      : { type: "unrecognized" };
  }
  const cleanup = CLEANUP.exec(name);
  if (cleanup) return { type: "cleanup", session: cleanup[1]! };
  const match = QUARANTINED.exec(name);
  return match
    ? { type: "quarantine", session: match[1]!, epochMs: Number(match[3]) }
    : { type: "unrecognized" };
}

export interface EvidenceEntry {
  /** Relative to the sessions root; the walk's cursor key. */
  key: string;
  path: string;
  name: EvidenceName;
  kind: EntryKind;
  mtimeMs: number;
  /** Allocated bytes, counted in the survey (outside the lock) for entries due for removal. */
  allocatedBytes: number;
}

/** The names in a real directory; null when `dir` is not one (absent, a symlink, a file). */
async function namesOfRealDir(dir: string): Promise<string[] | null> {
  return (await entryKind(dir)) === "directory" ? names(dir) : null;
}

/**
 * Whether `rel` (relative to `root`) is a real directory and so is every directory on the
 * way to it: lstat checks only the last component of a path, so a symlinked session
 * directory would otherwise lead a walk, a rename or an rmdir into the link's target.
 */
export async function isRealDirPath(root: string, rel: string): Promise<boolean> {
  let at = root;
  for (const part of rel.split("/")) {
    at = path.join(at, part);
    if ((await entryKind(at)) !== "directory") return false;
  }
  return true;
}

export interface EvidenceListing {
  /** Up to `limit` entry keys after the cursor, in walk order. */
  keys: string[];
  /** Entries beyond these. */
  more: boolean;
  /** `<session>/continuity-breaks` folders walked that are already empty (relative to the root). */
  emptyArchiveDirs: string[];
}

/**
 * The walk's next `limit` entries after `after` (a key it returned, or null/"" for the
 * start): the sessions' archives, session by session in the order of `sessions` (sorted),
 * then the quarantine entries. Only the folders from the cursor on are read, so a batch
 * costs what it lists, not the whole tree.
 */
export async function listEvidence(
  root: string,
  sessions: string[],
  after: string | null,
  limit: number,
): Promise<EvidenceListing> {
  const listing: EvidenceListing = { keys: [], more: false, emptyArchiveDirs: [] };
  // Where the cursor is: in a session's archives, or (`quarantine/...`) in quarantine.
  const cut = after?.lastIndexOf("/") ?? -1;
  const afterFolder = cut < 0 ? "" : after!.slice(0, cut);
  const afterName = cut < 0 ? "" : after!.slice(cut + 1);
  const inQuarantine = afterFolder === QUARANTINE_DIR;
  const afterSession = afterFolder.split("/")[0]!;
  /** Adds the names of `folder` after the cursor; false once the listing is full. */
  const add = (folder: string, found: string[]): boolean => {
    for (const name of found.sort()) {
      if (folder === afterFolder && name <= afterName) continue;
      if (listing.keys.length === limit) {
        listing.more = true;
        return false;
      }
      listing.keys.push(`${folder}/${name}`);
    }
    return true;
  };
  for (const session of inQuarantine ? [] : sessions) {
    if (session < afterSession) continue;
    // A symlinked session directory is never walked: what it points at is not this session's.
    if (!(await isRealDirPath(root, session))) continue;
    const folder = `${session}/${CONTINUITY_BREAKS_DIR}`;
    const found = await namesOfRealDir(path.join(root, folder));
    if (found === null) continue;
    if (found.length === 0) listing.emptyArchiveDirs.push(folder);
    if (!add(folder, found)) return listing;
  }
  add(QUARANTINE_DIR, (await namesOfRealDir(path.join(root, QUARANTINE_DIR))) ?? []);
  return listing;
}

export async function surveyEvidence(root: string, key: string): Promise<EvidenceEntry> {
  const parts = key.split("/");
  const name = parts.at(-1)!;
  const full = path.join(root, key);
  const parsed =
    parts[0] === QUARANTINE_DIR && parts.length === 2
      ? parseEvidenceName("quarantine", name)
      : parseEvidenceName("continuity_break", name, parts[0]);
  try {
    const stat = await lstat(full);
    const kind: EntryKind = stat.isSymbolicLink()
      ? "symlink"
      : stat.isDirectory()
        ? "directory"
        : stat.isFile()
          ? "file"
          : "other";
    return { key, path: full, name: parsed, kind, mtimeMs: stat.mtimeMs, allocatedBytes: 0 };
  } catch (error) {
    // Gone since it was listed (another job, the executor): reported as `vanished`.
    if (errnoCode(error) !== "ENOENT") throw error;
    return { key, path: full, name: parsed, kind: "missing", mtimeMs: 0, allocatedBytes: 0 };
  }
}

/** The entry with its allocated bytes, or `missing` when it vanished while they were counted. */
export async function countEvidenceBytes(entry: EvidenceEntry, signal?: AbortSignal): Promise<EvidenceEntry> {
  try {
    return { ...entry, allocatedBytes: (await treeStats(entry.path, signal)).allocatedBytes };
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error;
    return { ...entry, kind: "missing" };
  }
}
