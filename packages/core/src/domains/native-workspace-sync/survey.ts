/**
 * Filesystem reads for a batch: which run folders exist, what each one is (a real directory
 * or not), its identity, newest modification and allocated bytes.
 * `<instance>/native-workspace-sync/generations` and any other name that is not a run id is
 * never looked at. The top folder is taken as configured; below it nothing is followed
 * (fs/proven-dir.ts).
 */
import type { Dirent } from "node:fs";
import { errnoCode } from "@reclaim/shared";
import {
  BOUNDED_WIDTH,
  fromListing,
  kindOf,
  mapInOrder,
  treeStats,
  UUID_NAME,
  type EntryKind,
  type Identity,
  type ProvenDir,
  type TreeStats,
} from "../../fs";

export interface FolderSurvey {
  name: string;
  path: string;
  kind: EntryKind;
  identity: Identity | null;
  stats: TreeStats | null;
}

/**
 * The names in a listing of the top folder that are run ids, in name order (sorted once per
 * listing, and the same array for a reused listing: fs/listings.ts); each is lstat'ed when
 * surveyed, whatever the listing said it was.
 */
export function runFolderNames(listing: readonly Dirent[]): readonly string[] {
  return fromListing(listing, "native-workspace-sync run folders", (entries) =>
    entries
      .map((e) => e.name)
      .filter((name) => UUID_NAME.test(name))
      .sort(),
  );
}

/** One folder, without confirming `top` (surveyFolders does, after the walks). */
async function walkFolder(top: ProvenDir, name: string, signal?: AbortSignal): Promise<FolderSurvey> {
  const full = top.join(name);
  const info = await top.lstatEntry(name);
  const kind = kindOf(info);
  if (kind !== "directory") return { name, path: full, kind, identity: null, stats: null };
  try {
    const stats = await treeStats(full, signal, info!);
    return { name, path: full, kind, identity: { dev: info!.dev, ino: info!.ino }, stats };
  } catch (error) {
    // Removed meanwhile (another job): judged as gone.
    if (errnoCode(error) === "ENOENT")
      return { name, path: full, kind: "missing", identity: null, stats: null };
    throw error;
  }
}

/**
 * The folders `names` of `top`, in that order, up to BOUNDED_WIDTH walked at once; `each`
 * runs after each walk. The walks go below `top` by path: once they are all done, `top` must
 * still be the directory proven (one `confirm` for the group: a level replaced by a link during
 * any walk, and still replaced, is refused as it would be after that walk alone). Stops, with
 * the signal's reason, when it is aborted; on a failure, starts no more walks, waits for those
 * under way and throws the first failure.
 */
export async function surveyFolders(
  top: ProvenDir,
  names: readonly string[],
  options: { signal?: AbortSignal; each?: () => Promise<void> } = {},
): Promise<FolderSurvey[]> {
  const { signal, each } = options;
  const results = await mapInOrder(names, BOUNDED_WIDTH, async (name) => {
    signal?.throwIfAborted();
    const survey = await walkFolder(top, name, signal);
    signal?.throwIfAborted();
    await each?.();
    return survey;
  });
  if (names.length > 0) await top.confirm();
  return results;
}
