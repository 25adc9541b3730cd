/**
 * Restoring a snapshot into an existing directory, as the stream is read.
 *
 * Nothing already there is ever replaced and nothing is followed: every entry is created
 * through the DirChain with O_CREAT | O_EXCL | O_NOFOLLOW, mkdir or symlink (each fails on an
 * existing name, a link included), so an existing file, link or special file at a path the
 * snapshot holds fails the restore with `restore_target_exists`. A directory record meets an
 * existing real directory by entering it (its mode is left alone): that is how a git payload
 * lands in a checked-out worktree. Directories are created 0700 and get their recorded mode
 * and mtime once their contents are written; files are written 0600, fsynced, then get their
 * mode and mtime; each directory is fsynced as it is left.
 *
 * A restore that fails leaves what it had written: restore into a fresh staging directory
 * and discard it on error (task directories use `.restoring-<random>` beside the target),
 * then compare `digestTree(staging)` with the recorded tree digest before renaming it in.
 */
import { constants, fchmod, fsync, futimes } from "node:fs";
import { lstat, lutimes, mkdir, open, symlink, type FileHandle } from "node:fs/promises";
import { promisify } from "node:util";
import type { Readable } from "node:stream";
import { DirChain } from "./dir-chain";
import { decodeSnapshot, type DecodedEntry, type DecodeOptions } from "./decode";
import type { SnapshotSummary } from "./encode";
import { TreeSnapshotError } from "./errors";
import { isRootIdentity, type RootIdentity } from "./plan";
import { errnoCode } from "../errors";

const O_CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/** On a directory's descriptor, as the DirChain hands it over when the restore leaves it. */
const fsyncFd = promisify(fsync);
const fchmodFd = promisify(fchmod);
const futimesFd = promisify(futimes);

export interface RestoreOptions extends DecodeOptions {
  /** fsync files and directories as they are written. Default true. */
  durable?: boolean;
  /** The target as the caller proved it (see PlanOptions.rootIdentity): another directory there is refused. */
  rootIdentity?: RootIdentity;
}

export async function restoreSnapshot(
  stream: Readable,
  target: string,
  options: RestoreOptions,
): Promise<SnapshotSummary> {
  const durable = options.durable ?? true;
  let chain: DirChain;
  if (options.rootIdentity) {
    const root = await lstat(target, { bigint: true }).catch(() => null);
    if (root === null || !root.isDirectory() || !isRootIdentity(root, options.rootIdentity))
      throw new TreeSnapshotError("unsafe_root", "", "target is not the directory that was proven");
    chain = await DirChain.open(target, { dev: root.dev, ino: root.ino });
  } else chain = await DirChain.open(target);
  // Directories this restore created: their recorded mode and mtime are set when left.
  const created = new Map<string, DecodedEntry>();
  let rootEntry: DecodedEntry | null = null;
  let file: { handle: FileHandle; entry: DecodedEntry } | null = null;

  const onLeave = async (rel: string, fd: number): Promise<void> => {
    const entry = rel === "" ? rootEntry : created.get(rel);
    if (durable) await fsyncFd(fd);
    if (!entry) return;
    await fchmodFd(fd, entry.mode);
    const seconds = Number(entry.mtimeNs) / 1e9;
    await futimesFd(fd, seconds, seconds);
  };
  const exists = (entry: DecodedEntry, cause?: unknown): TreeSnapshotError =>
    new TreeSnapshotError("restore_target_exists", entry.path, "an entry is already there", { cause });

  try {
    return await decodeSnapshot(stream, options, {
      async directory(entry) {
        if (entry.path === "") {
          rootEntry = entry;
          return;
        }
        await chain.leaveFor(entry.path, onLeave);
        const at = chain.childPath(entry.path);
        try {
          await mkdir(at, 0o700);
          created.set(entry.path, entry);
        } catch (error) {
          if (errnoCode(error) !== "EEXIST") throw error;
        }
        const stat = await lstat(at, { bigint: true });
        if (!stat.isDirectory()) throw exists(entry);
        await chain.enter(entry.path, stat);
      },
      async fileStart(entry) {
        await chain.leaveFor(entry.path, onLeave);
        try {
          file = { handle: await open(chain.childPath(entry.path), O_CREATE_NEW, 0o600), entry };
        } catch (error) {
          const code = errnoCode(error);
          if (code === "EEXIST" || code === "ELOOP") throw exists(entry, error);
          throw error;
        }
      },
      async fileChunk(chunk) {
        for (let at = 0; at < chunk.length;) {
          const { bytesWritten } = await file!.handle.write(chunk, at, chunk.length - at);
          at += bytesWritten;
        }
      },
      async fileEnd() {
        const { handle, entry } = file!;
        file = null;
        try {
          if (durable) await handle.sync();
          await handle.chmod(entry.mode);
          const seconds = Number(entry.mtimeNs) / 1e9;
          await handle.utimes(seconds, seconds);
        } finally {
          await handle.close();
        }
      },
      async symlink(entry, linkTarget) {
        await chain.leaveFor(entry.path, onLeave);
        const at = chain.childPath(entry.path);
        try {
          await symlink(linkTarget, at);
        } catch (error) {
          if (errnoCode(error) === "EEXIST") throw exists(entry, error);
          throw error;
        }
        const seconds = Number(entry.mtimeNs) / 1e9;
        await lutimes(at, seconds, seconds);
      },
      async end() {
        await chain.leaveAll(onLeave);
      },
    });
  } finally {
    const open = file as { handle: FileHandle } | null;
    if (open) await open.handle.close().catch(() => undefined);
    chain.close();
  }
}
