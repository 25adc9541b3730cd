/**
 * The rename half of the retire-then-delete protocol (see retired-names.ts), and removal.
 *
 * `retire` renames a real directory to a unique sibling; it refuses a symlink, anything that
 * is not a directory, and (when given) a directory whose device+inode identity is no longer
 * the one that was checked, so a tree recreated meanwhile at the same path is never taken.
 * `removeRetired` deletes a retired tree, never through a symlink, and reports the allocated
 * bytes freed. A failure leaves the retired name in place for a later sweep.
 */
import { lstat, rename, rm } from "node:fs/promises";
import path from "node:path";
import { errnoCode } from "@reclaim/shared";
import { retiredName, retiredPrefixOf, type RetiredPrefix } from "./retired-names";
import { identityOf, sameIdentity, treeStats, type Identity } from "./tree";

export type RetireRefusal = "missing" | "symlink" | "not_a_directory" | "identity_changed";

export class RetireRefused extends Error {
  constructor(
    readonly reason: RetireRefusal,
    readonly target: string,
  ) {
    super(`refusing to retire ${target}: ${reason}`);
    this.name = "RetireRefused";
  }
}

/**
 * `name`: the sibling name to use, when the caller recorded it before the rename (so a later
 * sweep knows exactly what to finish); it must carry `prefix`.
 */
export async function retire(
  target: string,
  prefix: RetiredPrefix,
  expect?: Identity,
  name: string = retiredName(prefix),
): Promise<string> {
  if (retiredPrefixOf(name) !== prefix) throw new Error(`BUG: ${name} is not a ${prefix} name`);
  let stat;
  try {
    stat = await lstat(target);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") throw new RetireRefused("missing", target);
    throw error;
  }
  if (stat.isSymbolicLink()) throw new RetireRefused("symlink", target);
  if (!stat.isDirectory()) throw new RetireRefused("not_a_directory", target);
  if (expect && !sameIdentity(expect, { dev: stat.dev, ino: stat.ino })) {
    throw new RetireRefused("identity_changed", target);
  }
  const destination = path.join(path.dirname(target), name);
  try {
    await rename(target, destination);
  } catch (error) {
    // Gone between the check and the rename (another job, the Paperclip server).
    if (errnoCode(error) === "ENOENT") throw new RetireRefused("missing", target);
    throw error;
  }
  return destination;
}

/**
 * Moves a retired tree back to `original` (undo of `retire`). Refuses when `original`
 * exists again: a newer tree there wins, and the caller decides what to do with this one.
 */
export async function unretire(retired: string, original: string): Promise<boolean> {
  if ((await identityOf(original)) !== null) return false;
  await rename(retired, original);
  return true;
}

/**
 * Deletes a retired tree that other jobs may also be finishing (a shared folder's leftovers):
 * it is first claimed by renaming it to a fresh name of the same kind, atomically, so exactly
 * one claimant deletes it. Returns `null` when another job claimed it first. A failed delete
 * throws `LeftoverDeleteFailed` naming where the tree now lies, for a later sweep.
 */
export async function claimAndRemove(retired: string): Promise<{ bytes: number } | null> {
  const prefix = retiredPrefixOf(path.basename(retired));
  if (!prefix) throw new Error(`BUG: ${retired} does not carry a retired name`);
  const claimed = path.join(path.dirname(retired), retiredName(prefix));
  try {
    await rename(retired, claimed);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return null;
    throw new LeftoverDeleteFailed(retired, error);
  }
  try {
    return { bytes: await removeRetired(claimed) };
  } catch (error) {
    throw new LeftoverDeleteFailed(claimed, error);
  }
}

export class LeftoverDeleteFailed extends Error {
  constructor(
    /** Where the retired tree is now. */
    readonly path: string,
    cause: unknown,
  ) {
    super(`could not delete ${path}`, { cause });
    this.name = "LeftoverDeleteFailed";
  }
}

/** Deletes a tree that carries a retired name; returns the allocated bytes it held. */
export async function removeRetired(retired: string): Promise<number> {
  if (!retiredPrefixOf(path.basename(retired)))
    throw new Error(`BUG: ${retired} does not carry a retired name`);
  const stat = await lstat(retired).catch((error: unknown) => {
    if (errnoCode(error) === "ENOENT") return null;
    throw error;
  });
  if (stat === null) return 0;
  if (stat.isSymbolicLink()) throw new RetireRefused("symlink", retired);
  const { allocatedBytes } = await treeStats(retired);
  // fs.rm walks with lstat and unlinks links without following them.
  await rm(retired, { recursive: true, force: false, maxRetries: 2 });
  return allocatedBytes;
}
