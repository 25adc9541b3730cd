/**
 * Finishing interrupted deletions: trees that were retired (renamed aside) but whose delete
 * did not complete (a crash, a full disk, EACCES). A batch tries a bounded number, resuming
 * after the last one it tried, so a leftover that cannot be deleted never blocks the others.
 * Several jobs may walk the same directory: each leftover is claimed before it is deleted
 * (`claimAndRemove`), so no two jobs delete the same tree and none reports another's
 * deletion as failed, and a tree whose claimant is still deleting it is no leftover
 * (`claimantIsLive`): it is neither tried nor reported here, so each tree is reported
 * once. A leftover that is a symlink is refused (`symlink`), never followed.
 * A few leftovers are deleted at once (DELETES_AT_ONCE).
 */
import type { Dirent } from "node:fs";
import { mapInOrder } from "./in-order";
import { claimAndRemove, claimantIsLive, LeftoverDeleteFailed } from "./retire";
import { PathRefused, type PathRefusal, type ProvenDir } from "./proven-dir";
import { retiredPrefixOf, type RetiredPrefix } from "./retired-names";

export interface LeftoverResult {
  name: string;
  /** Where it lies now (a leftover that could not be deleted keeps its claimed name). */
  path: string;
  /** Allocated bytes freed, or the error that kept it. */
  bytes?: number;
  error?: unknown;
  /** Not deleted, and why: a symlink (or the folder changed under it). */
  refused?: PathRefusal;
  /** Another job claimed it first: nothing to report here. */
  taken?: boolean;
}

export interface LeftoverBatch {
  results: LeftoverResult[];
  /** Resume after this name next time; `null` when the walk reached the end. */
  cursor: string | null;
}

/** Leftovers deleted at once. */
export const DELETES_AT_ONCE = 4;

/**
 * Retired names of the given kinds in `dir`, sorted, with whether each is a symlink.
 * `listing`: the entries of a `dir.list()` the caller has just taken (one listing of a large
 * directory shared with the caller's own walk of it).
 */
export async function listRetired(
  dir: ProvenDir,
  prefixes: readonly RetiredPrefix[],
  listing?: readonly Dirent[],
): Promise<{ name: string; symlink: boolean }[]> {
  return (listing ?? (await dir.list()))
    .filter((entry) => {
      const prefix = retiredPrefixOf(entry.name);
      return prefix !== null && prefixes.includes(prefix);
    })
    .map((entry) => ({ name: entry.name, symlink: entry.isSymbolicLink() }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export async function finishInterruptedDeletes(
  dir: ProvenDir,
  options: {
    prefixes: readonly RetiredPrefix[];
    limit: number;
    after: string | null;
    signal?: AbortSignal;
    /** As for `listRetired`. */
    listing?: readonly Dirent[];
  },
): Promise<LeftoverBatch> {
  // A tree a live claimant is deleting is not a leftover (it was claimed after the listing
  // or is being deleted now): the claimant reports it.
  const all = (await listRetired(dir, options.prefixes, options.listing)).filter(
    ({ name }) => !claimantIsLive(dir, name),
  );
  const start = options.after === null ? 0 : all.findIndex((entry) => entry.name > options.after!);
  const todo = start < 0 ? [] : all.slice(start, start + options.limit);
  // Once aborted, no more are started: those after the last tried are left for the next batch.
  const results = await mapInOrder(
    todo,
    DELETES_AT_ONCE,
    async ({ name, symlink }): Promise<LeftoverResult> => {
      const full = dir.join(name);
      if (symlink) return { name, path: full, refused: "symlink" };
      try {
        const removed = await claimAndRemove(dir, name);
        return removed === null ? { name, path: full, taken: true } : { name, path: full, ...removed };
      } catch (error) {
        if (error instanceof PathRefused && error.reason !== "missing" && error.reason !== "identity_changed")
          return { name, path: full, refused: error.reason };
        return { name, path: error instanceof LeftoverDeleteFailed ? error.path : full, error };
      }
    },
    () => options.signal?.aborted === true,
  );
  const last = results.at(-1)?.name ?? null;
  const reachedEnd = start < 0 || start + results.length >= all.length;
  return { results, cursor: reachedEnd ? null : last };
}
