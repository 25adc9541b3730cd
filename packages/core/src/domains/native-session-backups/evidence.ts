/**
 * The evidence native sessions leave under the sessions root, read from the filesystem
 * only (this part never queries the database), never through a symlink: a session
 * directory, `continuity-breaks` or `quarantine` is proven a real directory before it is
 * listed (fs/proven-dir.ts; one that is a link is refused and reported, never walked), and the
 * folders above an entry are checked again right before it is renamed.
 *   <session>/continuity-breaks/<epoch ms>-<UUID>/           nothing reads these again
 *   quarantine/<session>.<reason>.<epoch ms>.<pid>.<UUID>/   recovery and failed-run retry consult these
 *   quarantine/<session>.identity_indeterminate.cleanup.<UUID>  native cleanup's, referenced from recovery history: kept
 * plus `.expired-<UUID>` leftovers of interrupted deletions in either folder.
 */
import type { Stats } from "node:fs";
import { errnoCode } from "@reclaim/shared";
import {
  claimantIsLive,
  kindOf,
  PathRefused,
  retiredPrefixOf,
  treeStats,
  UUID_PATTERN,
  type EntryKind,
  type ProvenDir,
} from "../../fs";
import type { ArchiveDir } from "./batch";
import { takeInOrder } from "../../fs";
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
  /** The proven folder it is in, and its name there. */
  dir: ProvenDir;
  entryName: string;
  /** For an archive: its `continuity-breaks` folder, removed once empty. */
  archiveDir?: ArchiveDir;
  name: EvidenceName;
  kind: EntryKind;
  mtimeMs: number;
  /** Allocated bytes, counted in the survey (outside the lock) for entries due for removal. */
  allocatedBytes: number;
  /** The survey's lstat of it (absent when it was gone). */
  stat?: Stats;
}

export interface EvidenceListing {
  /** Up to `limit` entry keys after the cursor, in walk order. */
  keys: string[];
  /** Entries beyond these. */
  more: boolean;
  /** `<session>/continuity-breaks` folders walked that are already empty. */
  emptyArchiveDirs: ArchiveDir[];
  /** The proven folders the keys are in, by folder key (`<session>/continuity-breaks`, `quarantine`). */
  folders: Map<string, { dir: ProvenDir; archiveDir?: ArchiveDir }>;
  /** Folders that are links (or not directories): never walked, reported. */
  refused: PathRefused[];
}

/** `name` of `parent`, proven; null when absent, or refused (with why). */
async function openFolder(
  parent: ProvenDir,
  name: string,
): Promise<{ dir: ProvenDir | null; refused: PathRefused | null }> {
  try {
    return { dir: await parent.child(name), refused: null };
  } catch (error) {
    if (!(error instanceof PathRefused)) throw error;
    return { dir: null, refused: error };
  }
}

/** `name` of `parent`, proven; null when absent, or refused (recorded in `listing`). */
async function folderOf(
  listing: EvidenceListing,
  parent: ProvenDir,
  name: string,
): Promise<ProvenDir | null> {
  const opened = await openFolder(parent, name);
  if (opened.refused) listing.refused.push(opened.refused);
  return opened.dir;
}

/** `names` of `dir` but for trees another job has claimed and is deleting (retire.ts): no evidence, no leftover. */
const unclaimed = (dir: ProvenDir, names: string[]) => names.filter((name) => !claimantIsLive(dir, name));

/**
 * The walk's next `limit` entries after `after` (a key it returned, or null/"" for the
 * start): the sessions' archives, session by session in the order of `sessions` (sorted),
 * then the quarantine entries. Only the folders from the cursor on are read, so a batch
 * costs what it lists, not the whole tree.
 */
export async function listEvidence(
  top: ProvenDir,
  sessions: readonly string[],
  after: string | null,
  limit: number,
  /**
   * Expiring: the removals left in the batch. The listing also stops once it holds that many
   * entries that their names do not keep (`keptByName`): the survey stops at the removals
   * anyway, and folders listed beyond them were listed again by the next batch.
   */
  removals: { limit: number; now: number; windowMs: number } = { limit: Infinity, now: 0, windowMs: 0 },
): Promise<EvidenceListing> {
  const listing: EvidenceListing = {
    keys: [],
    more: false,
    emptyArchiveDirs: [],
    folders: new Map(),
    refused: [],
  };
  // Where the cursor is: in a session's archives, or (`quarantine/...`) in quarantine.
  const cut = after?.lastIndexOf("/") ?? -1;
  const afterFolder = cut < 0 ? "" : after!.slice(0, cut);
  const afterName = cut < 0 ? "" : after!.slice(cut + 1);
  const inQuarantine = afterFolder === QUARANTINE_DIR;
  const afterSession = afterFolder.split("/")[0]!;
  /** Adds the names of `folder` after the cursor; false once the listing is full. */
  let removable = 0;
  const add = (folder: string, found: string[]): boolean => {
    for (const name of found.sort()) {
      if (folder === afterFolder && name <= afterName) continue;
      if (listing.keys.length === limit || removable >= removals.limit) {
        listing.more = true;
        return false;
      }
      listing.keys.push(`${folder}/${name}`);
      if (!keptByName(folder, name, removals.now, removals.windowMs)) removable += 1;
    }
    return true;
  };
  // A few sessions' folders are read at once (bounded.ts), added in session order; the
  // listing stops at the first that fills it.
  const todo = inQuarantine ? [] : sessions.filter((session) => session >= afterSession);
  let full = false;
  await takeInOrder(
    todo,
    async (session) => {
      // A symlinked session directory is never walked (the session walk reports it).
      let dir: ProvenDir | null;
      try {
        dir = await top.child(session);
      } catch (error) {
        if (error instanceof PathRefused) return null;
        throw error;
      }
      if (dir === null) return null;
      const archives = await openFolder(dir, CONTINUITY_BREAKS_DIR);
      if (archives.refused || archives.dir === null) return { ...archives, session: dir, found: [] };
      return { ...archives, session: dir, found: (await archives.dir.list()).map((entry) => entry.name) };
    },
    (opened, session) => {
      if (opened === null) return true;
      if (opened.refused) listing.refused.push(opened.refused);
      if (opened.dir === null) return true;
      const folder = `${session}/${CONTINUITY_BREAKS_DIR}`;
      const archiveDir = { rel: folder, session: opened.session };
      listing.folders.set(folder, { dir: opened.dir, archiveDir });
      if (opened.found.length === 0) listing.emptyArchiveDirs.push(archiveDir);
      full = !add(folder, unclaimed(opened.dir, opened.found));
      return !full;
    },
  );
  if (full) return listing;
  const quarantine = await folderOf(listing, top, QUARANTINE_DIR);
  if (quarantine !== null) {
    listing.folders.set(QUARANTINE_DIR, { dir: quarantine });
    add(
      QUARANTINE_DIR,
      unclaimed(
        quarantine,
        (await quarantine.list()).map((entry) => entry.name),
      ),
    );
  }
  return listing;
}

/**
 * Whether the entry `name` of `folder` is kept whatever its lstat says: not evidence, a
 * cleanup quarantine entry, or not yet due by the epoch in its name. (Not the verdict:
 * rules.ts judges the surveyed entry; an epoch in the future counts as not kept here.)
 */
export function keptByName(folder: string, name: string, now: number, windowMs: number): boolean {
  const parsed =
    folder === QUARANTINE_DIR
      ? parseEvidenceName("quarantine", name)
      : parseEvidenceName("continuity_break", name, folder.split("/")[0]);
  if (parsed.type === "unrecognized" || parsed.type === "cleanup") return true;
  if (parsed.type === "leftover") return false;
  return parsed.epochMs <= now && parsed.epochMs + windowMs > now;
}

export async function surveyEvidence(listing: EvidenceListing, key: string): Promise<EvidenceEntry> {
  const cut = key.lastIndexOf("/");
  const folder = key.slice(0, cut);
  const entryName = key.slice(cut + 1);
  const { dir, archiveDir } = listing.folders.get(folder)!;
  const parsed =
    folder === QUARANTINE_DIR
      ? parseEvidenceName("quarantine", entryName)
      : parseEvidenceName("continuity_break", entryName, folder.split("/")[0]);
  const info = await dir.lstatEntry(entryName);
  // Gone since it was listed (another job, the executor): reported as `vanished`.
  return {
    key,
    path: dir.join(entryName),
    dir,
    entryName,
    ...(archiveDir ? { archiveDir } : {}),
    name: parsed,
    kind: kindOf(info),
    mtimeMs: info?.mtimeMs ?? 0,
    allocatedBytes: 0,
    ...(info ? { stat: info } : {}),
  };
}

/** The entry with its allocated bytes, or `missing` when it vanished while they were counted. */
export async function countEvidenceBytes(entry: EvidenceEntry, signal?: AbortSignal): Promise<EvidenceEntry> {
  try {
    // The walk starts from the survey's lstat of the entry (no second lstat of it).
    const bytes = (await treeStats(entry.path, signal, entry.stat)).allocatedBytes;
    // Counted below the folder by path: it must still be the folder proven.
    await entry.dir.confirm();
    return { ...entry, allocatedBytes: bytes };
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error;
    return { ...entry, kind: "missing" };
  }
}
