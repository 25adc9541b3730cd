/**
 * The rename half of the retire-then-delete protocol (see retired-names.ts), and removal, on
 * entries of a proven directory (proven-dir.ts): every rename and delete happens in a directory
 * whose levels were proven real, and is confirmed before and after.
 *
 * `retire` renames a real directory to a unique sibling; it refuses a symlink, anything that
 * is not a directory, and (when given) a directory whose device+inode identity is no longer
 * the one that was checked, so a tree recreated meanwhile at the same path is never taken.
 * `removeRetired` deletes a retired tree, never through a symlink, and reports the allocated
 * bytes freed. A failure leaves the retired name in place for a later sweep.
 */
import { errnoCode } from "@reclaim/shared";
import { PathRefused, type ProvenDir } from "./proven-dir";
import { hostProcessProbe, namedProcessIsLive, ownProcess, type ProcessProbe } from "../process/liveness";
import { claimantOf, claimedName, retiredName, retiredPrefixOf, type RetiredPrefix } from "./retired-names";
import { removeTree } from "./remove-tree";
import { sameIdentity, type Identity } from "./tree";

/**
 * Renames the real directory `name` of `dir` aside; returns its retired name. `retired`: the
 * name to use, when the caller recorded it before the rename (so a later sweep knows exactly
 * what to finish); it must carry `prefix`.
 */
export async function retire(
  dir: ProvenDir,
  name: string,
  prefix: RetiredPrefix,
  expect?: Identity,
  retired: string = retiredName(prefix),
): Promise<string> {
  if (retiredPrefixOf(retired) !== prefix) throw new Error(`BUG: ${retired} is not a ${prefix} name`);
  const at = dir.join(name);
  const info = await dir.lstatEntry(name);
  if (info === null) throw new PathRefused("missing", at);
  if (info.isSymbolicLink()) throw new PathRefused("symlink", at);
  if (!info.isDirectory()) throw new PathRefused("not_a_directory", at);
  if (expect && !sameIdentity(expect, { dev: info.dev, ino: info.ino })) {
    throw new PathRefused("identity_changed", at);
  }
  try {
    await dir.rename(name, retired);
  } catch (error) {
    // Gone between the check and the rename (another job, the Paperclip server).
    if (errnoCode(error) === "ENOENT") throw new PathRefused("missing", at);
    throw error;
  }
  return retired;
}

/**
 * Moves a retired tree of `dir` back to `original` (undo of `retire`). Refuses when `original`
 * exists again: a newer tree there wins, and the caller decides what to do with this one.
 */
export async function unretire(dir: ProvenDir, retired: string, original: string): Promise<boolean> {
  if ((await dir.lstatEntry(original)) !== null) return false;
  await dir.rename(retired, original);
  return true;
}

/** Claimed trees this process is deleting now (full paths). */
const deleting = new Set<string>();

/**
 * Whether the retired tree `name` of `dir` is claimed by a deletion under way, which no other
 * job may take over. Its claimant is this process: only while the deletion runs (one that
 * failed is a leftover like any other). Another process: while it can still be the claimant
 * (process/liveness.ts: the pid exists with the recorded start time, or one that cannot be
 * read: kept, fail closed); once it is gone (a kill -9) the tree is a leftover.
 */
export function claimantIsLive(
  dir: ProvenDir,
  name: string,
  probe: ProcessProbe = hostProcessProbe,
): boolean {
  const claimant = claimantOf(name);
  if (claimant === null) return false;
  const me = ownProcess();
  if (claimant.pid === me.pid && claimant.startedAtMs === me.startedAtMs) return deleting.has(dir.join(name));
  return namedProcessIsLive(claimant, probe);
}

/**
 * Deletes a retired tree that other jobs may also be finishing (a shared folder's leftovers):
 * it is first claimed by renaming it, atomically, to a claimed name of the same kind naming
 * this process (retired-names.ts `claimedName`), so exactly one claimant deletes it, and no
 * leftover pass takes it while the deletion runs (`claimantIsLive`). Returns `null` when
 * another job claimed it first. A failed delete throws `LeftoverDeleteFailed` naming where
 * the tree now lies, for a later sweep.
 */
export async function claimAndRemove(
  dir: ProvenDir,
  retired: string,
  /** Runs between the claim and the delete (fault points: a test's crash or interleaving). */
  afterClaim?: () => Promise<void>,
): Promise<{ bytes: number } | null> {
  const prefix = retiredPrefixOf(retired);
  if (!prefix) throw new Error(`BUG: ${retired} does not carry a retired name`);
  // A link carrying a retired name is refused as it is, never renamed (nor followed).
  const info = await dir.lstatEntry(retired);
  if (info === null) return null;
  if (info.isSymbolicLink()) throw new PathRefused("symlink", dir.join(retired));
  const claimed = claimedName(prefix, ownProcess());
  // Known to be under way before the name exists: a leftover pass of this process that
  // lists it right after the rename leaves it alone.
  deleting.add(dir.join(claimed));
  try {
    try {
      await dir.rename(retired, claimed);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return null;
      if (error instanceof PathRefused) throw error;
      throw new LeftoverDeleteFailed(dir.join(retired), error);
    }
    await afterClaim?.();
    try {
      return { bytes: await removeRetired(dir, claimed) };
    } catch (error) {
      if (error instanceof PathRefused) throw error;
      throw new LeftoverDeleteFailed(dir.join(claimed), error);
    }
  } finally {
    deleting.delete(dir.join(claimed));
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

/** Deletes the tree `retired` of `dir`, which carries a retired name; returns the allocated bytes it held. */
export async function removeRetired(dir: ProvenDir, retired: string): Promise<number> {
  if (!retiredPrefixOf(retired)) throw new Error(`BUG: ${retired} does not carry a retired name`);
  // Before anything below it is looked at: a level replaced by a link since `dir` was proven
  // would lead the walk (it lists every directory) into the link's target.
  try {
    await dir.confirm();
  } catch (error) {
    if (error instanceof PathRefused && error.reason === "missing") return 0;
    throw error;
  }
  const info = await dir.lstatEntry(retired);
  if (info === null) return 0;
  if (info.isSymbolicLink()) throw new PathRefused("symlink", dir.join(retired));
  // Right after the confirm: `dir` is still the proven directory, so the path below it is ours.
  // The walk lstats every entry before removing it, counts it then, and unlinks links
  // without following them (one walk: the bytes are those it removed).
  return removeTree(dir.join(retired), info);
}
