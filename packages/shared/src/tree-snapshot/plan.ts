/**
 * The first pass of a capture: which entries the snapshot holds, in canonical order, with
 * what lstat saw of each, and the exact encoded size (sealing needs it up front). Nothing is
 * followed: entries are lstat'ed through a DirChain, links are read with readlink.
 *
 * Two selections:
 *  - `walk`: everything below the root, minus what the caller's `exclude` rule leaves out
 *    (for example `excludeNodeModulesBesidePackageJson`); the root itself is the first record.
 *  - `paths`: exactly the listed relative paths (a listed directory brings its whole
 *    contents), plus the directories that contain them, each a directory record with its own
 *    mode; the root is not recorded (it belongs to whoever restores into it). This is what a
 *    git payload passes: `git ls-files` output for untracked and ignored files.
 */
import { createHash } from "node:crypto";
import type { BigIntStats } from "node:fs";
import { constants, lstatSync, readdirSync, readlinkSync } from "node:fs";
import { DirChain } from "./dir-chain";
import { TreeSnapshotError } from "./errors";
import {
  checkRelativePath,
  comparePaths,
  END_BYTES,
  fileRecordBytes,
  linkRecordBytes,
  MAGIC,
  MAX_PATH_BYTES,
  parentOf,
  recordHeaderBytes,
  utf8Name,
  type EntryKind,
  type TreeSnapshotLimits,
} from "./format";
import { errnoCode } from "../errors";
import { sliced, turnIfDue } from "../sliced";

export interface ExcludeCandidate {
  /** Relative path, '/'-separated. */
  path: string;
  name: string;
  kind: EntryKind;
  /** Every name in the same directory (before exclusion). */
  siblings: ReadonlySet<string>;
}

/** True leaves the entry (and, for a directory, its whole contents) out of the snapshot. */
export type ExcludeRule = (candidate: ExcludeCandidate) => boolean;

export type TreeSelection =
  { kind: "walk"; exclude?: ExcludeRule } | { kind: "paths"; paths: readonly string[] };

/** `node_modules` next to a `package.json`: installing the package recreates it. */
export const excludeNodeModulesBesidePackageJson: ExcludeRule = ({ name, kind, siblings }) =>
  name === "node_modules" && kind === "directory" && siblings.has("package.json");

export interface PlannedEntry {
  path: string;
  kind: EntryKind;
  /** Permission bits (0 for links). */
  mode: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  dev: bigint;
  ino: bigint;
  /** File bytes (0 for directories and links). */
  size: number;
  /** Link target, for links. */
  target?: string;
}

export interface TreePlan {
  root: string;
  selection: TreeSelection["kind"];
  entries: PlannedEntry[];
  /** Regular files and their bytes. */
  files: number;
  fileBytes: number;
  /** Exact bytes the encoded snapshot will have. */
  encodedSize: number;
  /** Allocated bytes (st_blocks x 512) of the entries held, as this pass saw them. */
  allocatedBytes: number;
  /** Relative paths the selection's `exclude` rule left out (a directory: its whole contents). */
  excluded: string[];
  /**
   * SHA-256 over every entry's path, kind, device, inode, mode, size, mtime and ctime as this
   * pass saw them: a later plan of an unchanged tree has the same value, and any write,
   * chmod, rename, touch or new entry changes it (ctime cannot be set back from user space).
   */
  stateDigest: string;
}

export interface PlanOptions {
  selection: TreeSelection;
  limits: TreeSnapshotLimits;
  signal?: AbortSignal;
  /**
   * The device and inode the caller proved the root to be (reached without a link at any
   * level: packages/core/src/fs/proven-dir.ts). Another directory at the path (a level above
   * swapped for a link since) is refused (`unsafe_root`) before anything in it is read.
   */
  rootIdentity?: RootIdentity;
}

export interface RootIdentity {
  dev: number | bigint;
  ino: number | bigint;
}

/** Whether `stat` is the directory `expect` names (numbers compared as the fs API gives them). */
export function isRootIdentity(
  stat: { dev: bigint; ino: bigint },
  expect: RootIdentity | undefined,
): boolean {
  return (
    expect === undefined ||
    (Number(stat.dev) === Number(expect.dev) && Number(stat.ino) === Number(expect.ino))
  );
}

export async function planTree(root: string, options: PlanOptions): Promise<TreePlan> {
  const rootStat = await sliced(() => lstatSync(root, { bigint: true })).catch((error: unknown) => {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new TreeSnapshotError("unsafe_root", "", "root does not exist", { cause: error });
    }
    throw error;
  });
  if (!rootStat.isDirectory()) {
    const what = rootStat.isSymbolicLink() ? "a symbolic link" : "not a directory";
    throw new TreeSnapshotError("unsafe_root", "", `root is ${what}`);
  }
  if (!isRootIdentity(rootStat, options.rootIdentity))
    throw new TreeSnapshotError("unsafe_root", "", "root is not the directory that was proven");
  const chain = await DirChain.open(root, { dev: rootStat.dev, ino: rootStat.ino });
  const planner = new Planner(root, chain, options);
  try {
    if (options.selection.kind === "walk") {
      planner.add(toEntry("", "directory", rootStat), rootStat.blocks);
      await planner.walk("", options.selection.exclude);
    } else {
      await planner.listed(options.selection.paths);
    }
  } finally {
    chain.close();
  }
  return planner.finish(options.selection.kind);
}

class Planner {
  readonly entries: PlannedEntry[] = [];
  private count = 0;
  private files = 0;
  private fileBytes = 0;
  private allocatedBytes = 0;
  private readonly excluded: string[] = [];

  constructor(
    private readonly root: string,
    private readonly chain: DirChain,
    private readonly options: PlanOptions,
  ) {}

  /** Adds an entry (`blocks`: its st_blocks). */
  add(entry: PlannedEntry, blocks: bigint): void {
    const { limits } = this.options;
    if (entry.path !== "") {
      this.count += 1;
      if (this.count > limits.maxFiles) {
        throw new TreeSnapshotError("too_many_files", entry.path, `more than ${limits.maxFiles} entries`);
      }
    }
    if (entry.kind === "file") {
      if (entry.size > limits.maxFileBytes) {
        throw new TreeSnapshotError(
          "file_too_large",
          entry.path,
          `${entry.size} bytes, over ${limits.maxFileBytes}`,
        );
      }
      this.files += 1;
      this.fileBytes += entry.size;
      if (this.fileBytes > limits.maxTotalBytes) {
        throw new TreeSnapshotError("too_large", entry.path, `files over ${limits.maxTotalBytes} bytes`);
      }
    }
    this.entries.push(entry);
    this.allocatedBytes += Number(blocks) * 512;
  }

  /**
   * Adds the contents of directory `relDir` (the root, or the entry just added), depth first;
   * enters it, and leaves it when done. Its entries are lstat'ed one after the other through the
   * directory's listing path, in the current slice (sliced.ts), without a promise each.
   */
  async walk(relDir: string, exclude?: ExcludeRule): Promise<void> {
    this.options.signal?.throwIfAborted();
    if (relDir !== "") await this.chain.enter(relDir, this.entries.at(-1)!);
    const listing = this.chain.listingPath(relDir);
    const raw = await sliced(() => readdirSync(listing, { encoding: "buffer" }));
    raw.sort(Buffer.compare);
    const prefix = relDir === "" ? "" : `${relDir}/`;
    const names = raw.map((name) => utf8Name(name, prefix + name.toString()));
    const siblings = exclude ? new Set(names) : null;
    const at = `${listing}/`;
    for (const name of names) {
      const pending = turnIfDue();
      if (pending !== null) await pending;
      const rel = prefix + name;
      const { entry, blocks } = this.inspect(at + name, rel);
      if (exclude?.({ path: rel, name, kind: entry.kind, siblings: siblings! })) {
        this.excluded.push(rel);
        continue;
      }
      this.add(entry, blocks);
      if (entry.kind === "directory") await this.walk(rel, exclude);
    }
    if (relDir !== "") this.chain.leave(relDir);
  }

  async listed(paths: readonly string[]): Promise<void> {
    const wanted = new Map<string, "listed" | "parent">();
    for (const raw of paths) {
      const rel = raw.endsWith("/") ? raw.slice(0, -1) : raw;
      checkRelativePath(rel, "unsafe_path");
      wanted.set(rel, "listed");
      for (let p = parentOf(rel); p !== ""; p = parentOf(p)) {
        if (!wanted.has(p)) wanted.set(p, "parent");
      }
    }
    const ordered = [...wanted.keys()].sort(comparePaths);
    // A listed directory brings its contents: skip listed paths inside it (already walked).
    let inside: string | null = null;
    for (const rel of ordered) {
      if (inside !== null && rel.startsWith(`${inside}/`)) continue;
      inside = null;
      const at = this.chain.childPath(rel);
      const { entry, blocks } = await sliced(() => this.inspect(at, rel));
      if (wanted.get(rel) === "parent" && entry.kind !== "directory") {
        throw new TreeSnapshotError("unsafe_path", rel, `a parent of listed paths is a ${entry.kind}`);
      }
      this.add(entry, blocks);
      if (entry.kind === "directory") {
        if (wanted.get(rel) === "listed") {
          await this.walk(rel);
          inside = rel;
        } else {
          await this.chain.enter(rel, entry);
        }
      }
    }
  }

  /** What lstat (at `at`, the entry `rel` named through its directory's descriptor) sees of it. */
  private inspect(at: string, rel: string): { entry: PlannedEntry; blocks: bigint } {
    let stat: BigIntStats;
    try {
      stat = lstatSync(at, { bigint: true });
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") {
        throw new TreeSnapshotError("changed_during_capture", rel, "entry vanished", { cause: error });
      }
      throw error;
    }
    const kind = kindOf(stat, rel);
    const entry = toEntry(rel, kind, stat);
    if (kind === "symlink") {
      const target = utf8Name(readlinkSync(at, { encoding: "buffer" }), rel);
      if (Buffer.byteLength(target) > MAX_PATH_BYTES) {
        throw new TreeSnapshotError("unsupported_filesystem_entry", rel, "link target is too long");
      }
      entry.target = target;
    }
    return { entry, blocks: stat.blocks };
  }

  finish(selection: TreeSelection["kind"]): TreePlan {
    const state = createHash("sha256").update(`reclaim tree state v1\0${selection}\0`);
    let encodedSize = MAGIC.length + END_BYTES;
    for (const e of this.entries) {
      const pathBytes = Buffer.byteLength(e.path, "utf8");
      if (e.kind === "file") encodedSize += fileRecordBytes(pathBytes, e.size);
      else if (e.kind === "symlink") encodedSize += linkRecordBytes(pathBytes, Buffer.byteLength(e.target!));
      else encodedSize += recordHeaderBytes(pathBytes);
      state.update(
        `${e.path}\0${e.kind}\0${e.dev}\0${e.ino}\0${e.mode}\0${e.size}\0${e.mtimeNs}\0${e.ctimeNs}\0${e.target ?? ""}\0`,
      );
    }
    return {
      root: this.root,
      selection,
      entries: this.entries,
      files: this.files,
      fileBytes: this.fileBytes,
      encodedSize,
      allocatedBytes: this.allocatedBytes,
      excluded: this.excluded,
      stateDigest: state.digest("hex"),
    };
  }
}

function kindOf(stat: BigIntStats, rel: string): EntryKind {
  // The type bits as a number: BigIntStats' isFile() and the like convert constants to BigInt
  // at every call.
  const type = Number(stat.mode) & constants.S_IFMT;
  if (type === constants.S_IFLNK) return "symlink";
  if (type === constants.S_IFDIR) return "directory";
  if (type === constants.S_IFREG) return "file";
  const what = stat.isFIFO()
    ? "a FIFO"
    : stat.isSocket()
      ? "a socket"
      : stat.isBlockDevice() || stat.isCharacterDevice()
        ? "a device"
        : "a special file";
  throw new TreeSnapshotError("unsupported_filesystem_entry", rel, `${what} cannot be saved`);
}

function toEntry(rel: string, kind: EntryKind, stat: BigIntStats): PlannedEntry {
  return {
    path: rel,
    kind,
    mode: kind === "symlink" ? 0 : Number(stat.mode & 0o7777n),
    mtimeNs: stat.mtimeNs,
    ctimeNs: stat.ctimeNs,
    dev: stat.dev,
    ino: stat.ino,
    size: kind === "file" ? Number(stat.size) : 0,
  };
}
