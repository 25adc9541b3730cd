/**
 * Finishing interrupted deletions: trees that were retired (renamed aside) but whose delete
 * did not complete (a crash, a full disk, EACCES). A batch tries a bounded number, resuming
 * after the last one it tried, so a leftover that cannot be deleted never blocks the others.
 * Several jobs may walk the same directory: each leftover is claimed before it is deleted
 * (`claimAndRemove`), so no two jobs delete the same tree and none reports another's
 * deletion as failed. A leftover that is a symlink is refused (`symlink`), never followed.
 */
import { claimAndRemove, LeftoverDeleteFailed } from "./retire";
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

/** Retired names of the given kinds in `dir`, sorted, with whether each is a symlink. */
export async function listRetired(
  dir: ProvenDir,
  prefixes: readonly RetiredPrefix[],
): Promise<{ name: string; symlink: boolean }[]> {
  return (await dir.list())
    .filter((entry) => {
      const prefix = retiredPrefixOf(entry.name);
      return prefix !== null && prefixes.includes(prefix);
    })
    .map((entry) => ({ name: entry.name, symlink: entry.isSymbolicLink() }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export async function finishInterruptedDeletes(
  dir: ProvenDir,
  options: { prefixes: readonly RetiredPrefix[]; limit: number; after: string | null; signal?: AbortSignal },
): Promise<LeftoverBatch> {
  const all = await listRetired(dir, options.prefixes);
  const start = options.after === null ? 0 : all.findIndex((entry) => entry.name > options.after!);
  const todo = start < 0 ? [] : all.slice(start, start + options.limit);
  const results: LeftoverResult[] = [];
  for (const { name, symlink } of todo) {
    if (options.signal?.aborted) break;
    const full = dir.join(name);
    if (symlink) {
      results.push({ name, path: full, refused: "symlink" });
      continue;
    }
    try {
      const removed = await claimAndRemove(dir, name);
      results.push(removed === null ? { name, path: full, taken: true } : { name, path: full, ...removed });
    } catch (error) {
      if (error instanceof PathRefused && error.reason !== "missing" && error.reason !== "identity_changed")
        results.push({ name, path: full, refused: error.reason });
      else results.push({ name, path: error instanceof LeftoverDeleteFailed ? error.path : full, error });
    }
  }
  const last = results.at(-1)?.name ?? null;
  const reachedEnd = start < 0 || start + results.length >= all.length;
  return { results, cursor: reachedEnd ? null : last };
}
