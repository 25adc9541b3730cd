/**
 * Resolving entries below a root without following a symbolic link at any level.
 *
 * Node has no openat(2). On Linux `/proc/self/fd/<fd>/<name>` is its equivalent: the
 * descriptor's magic link resolves to the directory that was opened (by identity, whatever
 * its path is now), and only `name` is looked up inside it. A chain keeps one descriptor per
 * directory of the current path, each opened with O_DIRECTORY | O_NOFOLLOW and checked by
 * device and inode against what was seen before, so swapping a parent for a link mid-walk
 * cannot redirect a read or a write outside the tree. Where /proc is missing the chain falls
 * back to plain paths; identity checks on every open still refuse a swapped entry.
 *
 * Entries must be visited in canonical order (parents before children): `childPath` closes
 * the descriptors of directories the walk has left.
 *
 * Descriptors are opened, checked and closed with synchronous calls in slices (../sliced.ts),
 * like the walks' lstat and readdir: through the thread pool, the three calls a directory costs
 * left a plan of a 2,000-file tree of 20 folders idle for a tenth of its time.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readlinkSync } from "node:fs";
import path from "node:path";
import { TreeSnapshotError } from "./errors";
import { parentOf } from "./format";
import { errnoCode } from "../errors";
import { sliced } from "../sliced";

const PROC_FD = procFdDir();

/**
 * This process's descriptor directory: `/proc/<pid>/fd` where `/proc/self` names this process
 * (its pid namespace's /proc), which spares the kernel resolving the `self` link on every
 * lookup (~6% of one); `/proc/self/fd` otherwise; null without /proc.
 */
function procFdDir(): string | null {
  if (!existsSync("/proc/self/fd")) return null;
  try {
    if (readlinkSync("/proc/self") === String(process.pid)) return `/proc/${process.pid}/fd`;
  } catch {
    // /proc/self unreadable as a link: use it as it is.
  }
  return "/proc/self/fd";
}
const O_DIR_NOFOLLOW = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

export interface Identity {
  dev: bigint;
  ino: bigint;
}

export class DirChain {
  /** The open directories of the current path, root first: `fd` a raw descriptor. */
  private readonly stack: { rel: string; fd: number }[] = [];

  private constructor(private readonly root: string) {}

  /** Opens `root` (never through a link at its last component) and checks it is `expect`. */
  static async open(root: string, expect?: Identity): Promise<DirChain> {
    const chain = new DirChain(path.resolve(root));
    await chain.push("", chain.root, expect);
    return chain;
  }

  /** A path naming `relPath` inside its parent's descriptor (the parent must be on the chain). */
  childPath(relPath: string): string {
    if (relPath === "") return this.root;
    const parent = parentOf(relPath);
    while (this.stack.length > 0 && this.stack.at(-1)!.rel !== parent) {
      closeSync(this.stack.pop()!.fd);
    }
    const top = this.stack.at(-1);
    if (!top) throw new Error(`BUG: ${relPath} visited out of canonical order`);
    const name = relPath.slice(parent === "" ? 0 : parent.length + 1);
    return PROC_FD ? `${PROC_FD}/${top.fd}/${name}` : path.join(this.root, relPath);
  }

  /**
   * A path to list the directory `relPath` (which must be the last one entered); followed by
   * `/<name>`, it names that entry of the directory (a walk's lstat of each entry in turn).
   */
  listingPath(relPath: string): string {
    const top = this.stack.at(-1);
    if (!top || top.rel !== relPath) throw new Error(`BUG: ${relPath} is not the current directory`);
    return PROC_FD ? `${PROC_FD}/${top.fd}` : path.join(this.root, relPath);
  }

  /** Leaves directory `relPath`, the last one entered (a walk done with it). */
  leave(relPath: string): void {
    const top = this.stack.at(-1);
    if (!top || top.rel !== relPath || this.stack.length === 1) {
      throw new Error(`BUG: ${relPath} is not the current directory below the root`);
    }
    this.stack.pop();
    closeSync(top.fd);
  }

  /**
   * Leaves every directory that is not an ancestor of `relPath`, awaiting `onLeave` for each
   * (deepest first) with the directory's descriptor before it closes: a restore sets modes and
   * times there.
   */
  async leaveFor(relPath: string, onLeave?: (rel: string, fd: number) => Promise<void>): Promise<void> {
    const parent = parentOf(relPath);
    while (this.stack.length > 1 && this.stack.at(-1)!.rel !== parent) {
      const { rel, fd } = this.stack.pop()!;
      try {
        await onLeave?.(rel, fd);
      } finally {
        closeSync(fd);
      }
    }
  }

  /** Leaves every directory below the root (see leaveFor), then calls `onLeave` for the root. */
  async leaveAll(onLeave?: (rel: string, fd: number) => Promise<void>): Promise<void> {
    await this.leaveFor("\0", onLeave);
    const root = this.stack[0];
    if (root) await onLeave?.(root.rel, root.fd);
  }

  /** Enters directory `relPath`, checking it is still the directory `expect` named. */
  async enter(relPath: string, expect: Identity): Promise<void> {
    await this.push(relPath, this.childPath(relPath), expect);
  }

  close(): void {
    while (this.stack.length > 0) closeSync(this.stack.pop()!.fd);
  }

  private async push(rel: string, at: string, expect?: Identity): Promise<void> {
    let fd: number;
    try {
      fd = await sliced(() => openSync(at, O_DIR_NOFOLLOW));
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ELOOP" || code === "ENOTDIR" || code === "ENOENT") {
        const reason = rel === "" ? "unsafe_root" : "changed_during_capture";
        throw new TreeSnapshotError(reason, rel, `not a directory any more (${code})`, { cause: error });
      }
      throw error;
    }
    let stat;
    try {
      stat = fstatSync(fd, { bigint: true });
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    if (!stat.isDirectory() || (expect && (stat.dev !== expect.dev || stat.ino !== expect.ino))) {
      closeSync(fd);
      const reason = rel === "" ? "unsafe_root" : "changed_during_capture";
      throw new TreeSnapshotError(reason, rel, "directory was replaced");
    }
    this.stack.push({ rel, fd });
  }
}
