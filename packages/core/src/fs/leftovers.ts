/**
 * Finishing interrupted deletions: trees that were retired (renamed aside) but whose delete
 * did not complete (a crash, a full disk, EACCES). A batch tries a bounded number, resuming
 * after the last one it tried, so a leftover that cannot be deleted never blocks the others.
 * Several jobs may walk the same directory: each leftover is claimed before it is deleted
 * (`claimAndRemove`), so no two jobs delete the same tree and none reports another's
 * deletion as failed.
 */
import { readdir } from "node:fs/promises";
import path from "node:path";
import { errnoCode } from "@reclaim/shared";
import { claimAndRemove, LeftoverDeleteFailed } from "./retire";
import { retiredPrefixOf, type RetiredPrefix } from "./retired-names";
import { entryKind } from "./tree";

export interface LeftoverResult {
  name: string;
  /** Where it lies now (a leftover that could not be deleted keeps its claimed name). */
  path: string;
  /** Allocated bytes freed, or the error that kept it. */
  bytes?: number;
  error?: unknown;
  /** Another job claimed it first: nothing to report here. */
  taken?: boolean;
}

export interface LeftoverBatch {
  results: LeftoverResult[];
  /** Resume after this name next time; `null` when the walk reached the end. */
  cursor: string | null;
}

export async function listRetired(dir: string, prefixes: readonly RetiredPrefix[]): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return [];
    throw error;
  }
  return names
    .filter((name) => {
      const prefix = retiredPrefixOf(name);
      return prefix !== null && prefixes.includes(prefix);
    })
    .sort();
}

export async function finishInterruptedDeletes(
  dir: string,
  options: { prefixes: readonly RetiredPrefix[]; limit: number; after: string | null; signal?: AbortSignal },
): Promise<LeftoverBatch> {
  const all = await listRetired(dir, options.prefixes);
  const start = options.after === null ? 0 : all.findIndex((name) => name > options.after!);
  const todo = start < 0 ? [] : all.slice(start, start + options.limit);
  const results: LeftoverResult[] = [];
  for (const name of todo) {
    if (options.signal?.aborted) break;
    const full = path.join(dir, name);
    if ((await entryKind(full)) === "symlink") {
      results.push({ name, path: full, error: new Error("symlink: never followed or removed") });
      continue;
    }
    try {
      const removed = await claimAndRemove(full);
      results.push(removed === null ? { name, path: full, taken: true } : { name, path: full, ...removed });
    } catch (error) {
      results.push({ name, path: error instanceof LeftoverDeleteFailed ? error.path : full, error });
    }
  }
  const last = results.at(-1)?.name ?? null;
  const reachedEnd = start < 0 || start + results.length >= all.length;
  return { results, cursor: reachedEnd ? null : last };
}
