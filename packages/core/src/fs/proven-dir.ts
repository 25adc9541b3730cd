/**
 * The one way any domain reaches a directory below a configured top folder: nothing below the
 * top folder is followed, read through or written through a symbolic link.
 *
 * Agents write into every tree Reclaim touches and may replace any directory with a link at
 * any moment. lstat looks only at a path's last component; readdir, open, mkdir, rename and
 * utimes resolve every component before it. So a link at any level above an entry would take a
 * listing, a read, a rename or a write into the link's target.
 *
 *   - `ProvenDir.top(path)`: the configured top folder (`<instance>/skills`, ...), taken as
 *     configured: a link there is the operator's (another disk) and is followed (stat). Its
 *     device+inode identity is recorded.
 *   - `dir.child(name)`: one lstat of the next level, which must be a real directory (never a
 *     link: `PathRefused("symlink")`); its identity is recorded. A ProvenDir is that chain of
 *     levels from the top folder down, each proven when it was reached.
 *   - `dir.list()`: `confirm` (below), readdir with file types (d_type: no lstat per name),
 *     then `recheck`: every level lstat'ed again, same identity, still no link. A listing taken
 *     while any level was swapped is discarded (`PathRefused`). A settled directory (below)
 *     needs only a `confirm` after the readdir. A large directory unchanged since its last
 *     listing is not read again (listings.ts).
 *   - Per entry only one more syscall: `dir.lstatEntry(name)`, and `dir.confirm()` (one lstat
 *     of the proven directory itself) before and after a rename, a write or a read: any level
 *     above replaced by a link would lead the path to another directory, whose identity differs.
 *   - Settled: every level was seen in place after the level below it was proven (the top
 *     folder; `settledChild`: the lstat of the child, then a confirm of its parent; a `recheck`
 *     that passed). Until then a level proven through a link put above it meanwhile would
 *     carry the identity of the link's target, and a confirm through the same link would
 *     pass: so an unsettled directory's listing rechecks every level. Once settled, a link
 *     put at any level (to another directory) leads its path elsewhere and one `confirm`
 *     refuses it; only a link to the very directory proven (moved) passes a confirm, and the
 *     path then still leads to that directory, as for every read, write and rename here.
 *   - Reads in a row right after a proof (`listUnconfirmed`, `readFileUnconfirmed`): no
 *     confirm around each; the caller confirms once after the last one (this settled
 *     directory, or a settled one below it: its path goes through this one) and uses nothing
 *     it read unless that confirm passes. A path-based check narrows races, it cannot close
 *     them: a link put in and taken out again between two checks is never seen (only
 *     descriptors could: packages/shared's tree-snapshot DirChain).
 *   - Writes: `ensureDir` (one mkdir, never recursive), `createFile` (O_CREAT | O_EXCL |
 *     O_NOFOLLOW, its times set through the descriptor), `rename` within the directory (undone
 *     when the directory is found changed after it), `readFile` (packages/shared's bounded
 *     reader: O_NOFOLLOW, fstat, at most limit+1 bytes).
 * A refusal names the level (`at`): domains report it with its reason (`symlink`,
 * `not_a_directory`, `path_changed`) and keep everything below it.
 */
import { constants, type Dirent, type Stats } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { lstat, lstatIfPresent, readdirTyped, rename, rmdir, stat } from "./calls";
import { keepListing, reusableListing } from "./listings";
import path from "node:path";
import { errnoCode, readFileBounded, type BoundedRead } from "@reclaim/shared";
import type { Identity } from "./tree";

/**
 * Why a path was not used: a level or entry that is a link or not a directory, a level that is
 * no longer the directory proven (`path_changed`); for an entry about to be renamed, gone
 * (`missing`) or replaced since it was checked (`identity_changed`).
 */
export type PathRefusal = "symlink" | "not_a_directory" | "path_changed" | "missing" | "identity_changed";

export class PathRefused extends Error {
  constructor(
    readonly reason: PathRefusal,
    /** The level that refused (absolute path). */
    readonly at: string,
  ) {
    super(`refusing ${at}: ${reason}`);
    this.name = "PathRefused";
  }
}

interface Level {
  path: string;
  dev: number;
  ino: number;
}

const O_CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

const absent = (error: unknown) => {
  const code = errnoCode(error);
  return code === "ENOENT" || code === "ENOTDIR";
};

export class ProvenDir {
  private constructor(
    /** The levels from the top folder down to this directory. */
    private readonly levels: readonly Level[],
    /** Every level seen in place after the level below it was proven (see the header). */
    private settled: boolean,
  ) {}

  get path(): string {
    return this.levels.at(-1)!.path;
  }

  get identity(): Identity {
    const { dev, ino } = this.levels.at(-1)!;
    return { dev, ino };
  }

  /** The path of `name` in this directory. */
  join(name: string): string {
    return path.join(this.path, name);
  }

  /**
   * The configured top folder, followed as configured; null when it does not exist. One that
   * is not a directory is refused (`not_a_directory`).
   */
  static async top(dir: string): Promise<ProvenDir | null> {
    let info: Stats;
    try {
      info = await stat(dir);
    } catch (error) {
      if (absent(error)) return null;
      throw error;
    }
    if (!info.isDirectory()) throw new PathRefused("not_a_directory", dir);
    return new ProvenDir([{ path: dir, dev: info.dev, ino: info.ino }], true);
  }

  /** The real directory `name` in this one, proven by one lstat; null when there is none. */
  async child(name: string): Promise<ProvenDir | null> {
    const info = await this.lstatEntry(name);
    return info === null ? null : this.childFrom(name, info);
  }

  /** `name`, from the lstat the caller already made of it (no syscall). */
  childFrom(name: string, info: Stats): ProvenDir {
    const at = this.join(name);
    if (info.isSymbolicLink()) throw new PathRefused("symlink", at);
    if (!info.isDirectory()) throw new PathRefused("not_a_directory", at);
    return new ProvenDir([...this.levels, { path: at, dev: info.dev, ino: info.ino }], false);
  }

  /**
   * `child`, settled when this directory is: after the child's lstat this directory is
   * confirmed (one more lstat), so the child was not reached through a link put above it.
   */
  async settledChild(name: string): Promise<ProvenDir | null> {
    const child = await this.child(name);
    if (child === null) return null;
    await this.confirm();
    child.settled = this.settled;
    return child;
  }

  /** lstat of the entry `name` (never followed); null when it is gone. */
  async lstatEntry(name: string): Promise<Stats | null> {
    try {
      return (await lstatIfPresent(this.join(name))) ?? null;
    } catch (error) {
      if (absent(error)) return null;
      throw error;
    }
  }

  /**
   * The entries of this directory with their types (from the listing, no lstat per entry).
   * None when it is gone. Discarded, with `PathRefused`, when any level changed meanwhile. A
   * large directory's listing is reused while the directory is unchanged (listings.ts): then
   * the confirm before is the only syscall (the levels rechecked when not settled).
   */
  async list(): Promise<readonly Dirent[]> {
    const startedAt = Date.now();
    // Before: a level replaced by a link since it was proven leads here elsewhere; nothing is read.
    let before: Stats;
    try {
      before = await this.confirm();
    } catch (error) {
      if (error instanceof PathRefused && error.reason === "missing") return [];
      throw error;
    }
    const reused = reusableListing(this.path, before);
    if (reused !== null) {
      if (!this.settled) await this.recheck();
      return reused;
    }
    const entries = await this.listUnconfirmed();
    // After: settled, a level swapped for a link meanwhile leads the path elsewhere now.
    const after = this.settled ? await this.confirm() : await this.recheck();
    keepListing(this.path, before, after, startedAt, entries);
    return entries;
  }

  /**
   * readdir with file types, nothing confirmed: only right after this directory was proven,
   * and only used once a later `confirm` of it (settled) or of a settled directory below it passed.
   */
  async listUnconfirmed(): Promise<Dirent[]> {
    try {
      return await readdirTyped(this.path);
    } catch (error) {
      if (absent(error)) return [];
      throw error;
    }
  }

  /** `readFile` without the confirms around it: as for `listUnconfirmed`. */
  readFileUnconfirmed(name: string, limit: number): Promise<BoundedRead> {
    return readFileBounded(this.join(name), limit);
  }

  /**
   * Every level again, top down: still a real directory with the identity it was proven with
   * (the top folder: followed, as configured). Throws `PathRefused` naming the first that is not.
   * Returns the stat of this directory, the last level.
   */
  async recheck(): Promise<Stats> {
    let info!: Stats;
    for (const [i, level] of this.levels.entries()) {
      try {
        info = i === 0 ? await stat(level.path) : await lstat(level.path);
      } catch (error) {
        if (absent(error)) throw new PathRefused("path_changed", level.path);
        throw error;
      }
      if (info.isSymbolicLink()) throw new PathRefused("symlink", level.path);
      if (!info.isDirectory() || info.dev !== level.dev || info.ino !== level.ino)
        throw new PathRefused("path_changed", level.path);
    }
    this.settled = true;
    return info;
  }

  /**
   * One lstat of this directory: still the one that was proven. Enough around an operation on
   * one entry: a level above replaced by a link leads the path to another directory. Returns
   * the stat it made.
   */
  async confirm(): Promise<Stats> {
    let info: Stats;
    try {
      info = this.levels.length === 1 ? await stat(this.path) : await lstat(this.path);
    } catch (error) {
      // Removed meanwhile (or a level above it was): nothing of it is left to act on.
      if (absent(error)) throw new PathRefused("missing", this.path);
      throw error;
    }
    if (info.isSymbolicLink()) throw new PathRefused("symlink", this.path);
    const { dev, ino } = this.identity;
    if (!info.isDirectory() || info.dev !== dev || info.ino !== ino)
      throw new PathRefused("path_changed", this.path);
    return info;
  }

  /** Reads the file `name` (never through a link, at most `limit` bytes), confirming this directory around it. */
  async readFile(name: string, limit: number): Promise<BoundedRead> {
    await this.confirm();
    const read = await this.readFileUnconfirmed(name, limit);
    await this.confirm();
    return read;
  }

  /** The directory `name` in this one, created (one level, never recursive) when missing. */
  async ensureDir(name: string): Promise<ProvenDir> {
    await this.confirm();
    try {
      await mkdir(this.join(name));
    } catch (error) {
      // Made meanwhile, or there already (a link or a file there is refused just below).
      if (errnoCode(error) !== "EEXIST") throw error;
    }
    const made = await this.child(name);
    if (made === null) throw new PathRefused("path_changed", this.join(name));
    await this.confirm();
    return made;
  }

  /**
   * Creates the new file `name` (never through a link, never over an existing entry: EEXIST
   * is thrown) with `content`, its modification time set to `mtime` through the descriptor.
   */
  async createFile(name: string, content: string, mtime: Date): Promise<void> {
    await this.confirm();
    const handle = await open(this.join(name), O_CREATE_NEW, 0o644);
    try {
      await handle.writeFile(content);
      await handle.utimes(mtime, mtime);
    } finally {
      await handle.close();
    }
    await this.confirm();
  }

  /**
   * Renames the entry `from` of this directory to `to`, in this directory. When the directory
   * is found changed afterwards the rename is undone (best effort) and refused.
   */
  async rename(from: string, to: string): Promise<void> {
    await this.confirm();
    await rename(this.join(from), this.join(to));
    try {
      await this.confirm();
    } catch (error) {
      await rename(this.join(to), this.join(from)).catch(() => undefined);
      throw error;
    }
  }

  /** Removes the entry `name` when it is an empty directory (rmdir never follows a link). */
  async removeEmptyDir(name: string): Promise<boolean> {
    await this.confirm();
    try {
      await rmdir(this.join(name));
      return true;
    } catch {
      return false;
    }
  }
}
