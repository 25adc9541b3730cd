import { constants } from "node:fs";
import {
  chmod,
  link,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  rmdir,
  stat,
  unlink,
} from "node:fs/promises";
import { fsyncDir } from "../durable-dirs";

/**
 * The filesystem calls publication makes, behind one narrow interface so a test can inject
 * a fault (ENOSPC on a pack's index, EPERM from `link`) at an exact step. Production always
 * uses `realPublishFs`; nothing else implements it outside tests.
 */
export interface PublishFs {
  /** Hard link; rejects with EEXIST when `to` exists (never replaces). */
  link(from: string, to: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(target: string): Promise<void>;
  /** Creates one directory; rejects with EEXIST when it exists. */
  mkdir(target: string): Promise<void>;
  chmod(target: string, mode: number): Promise<void>;
  /** Follows links. */
  stat(target: string): Promise<{ mode: number; ino: number; isDirectory: boolean }>;
  /** Does not follow links; null when absent. */
  lstat(target: string): Promise<{ ino: number; mtimeMs: number } | null>;
  readdir(target: string): Promise<string[]>;
  /** Removes an empty directory; rejects with ENOTEMPTY otherwise. */
  rmdir(target: string): Promise<void>;
  /**
   * Creates `target` (O_CREAT|O_EXCL: rejects with EEXIST when it exists, and needs no hard
   * link), writes `content` and fsyncs it. If writing fails, the file is removed again.
   */
  createExclusive(target: string, content: string): Promise<{ ino: number }>;
  /**
   * Overwrites `target` in place with `content` (and fsyncs it) if it still is inode `ino`;
   * resolves false when it is absent or another file.
   */
  overwriteIfSame(target: string, ino: number, content: string): Promise<boolean>;
  /** fsyncs a directory, so the entries created in it survive a power loss. */
  syncDir(target: string): Promise<void>;
  readFile(target: string): Promise<string>;
  /**
   * The size of `target` and its last `TAIL_BYTES` bytes (hex): for a pack or its reverse
   * index, the trailing checksum of the whole content.
   */
  fingerprint(target: string): Promise<{ size: number; tail: string }>;
  removeTree(target: string): Promise<void>;
}

const TAIL_BYTES = 64;

export const realPublishFs: PublishFs = {
  link: (from, to) => link(from, to),
  rename: (from, to) => rename(from, to),
  unlink: (target) => unlink(target),
  mkdir: async (target) => {
    await mkdir(target, 0o777);
  },
  chmod: (target, mode) => chmod(target, mode),
  stat: async (target) => {
    const s = await stat(target);
    return { mode: s.mode, ino: s.ino, isDirectory: s.isDirectory() };
  },
  lstat: async (target) => {
    try {
      const s = await lstat(target);
      return { ino: s.ino, mtimeMs: s.mtimeMs };
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return null;
      throw error;
    }
  },
  readdir: (target) => readdir(target),
  rmdir: (target) => rmdir(target),
  createExclusive: async (target, content) => {
    const handle = await open(target, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o666);
    let ino: number | undefined;
    try {
      ino = (await handle.stat()).ino;
      await handle.writeFile(content);
      await handle.sync();
      return { ino };
    } catch (error) {
      // Ours (O_EXCL), unless the name changed hands meanwhile (an unreadable ownership
      // record is breakable once old enough): removed only while it is still this inode.
      const now = await lstat(target).catch(() => null);
      if (now && (ino === undefined || now.ino === ino)) await unlink(target).catch(() => undefined);
      throw error;
    } finally {
      await handle.close();
    }
  },
  overwriteIfSame: async (target, ino, content) => {
    const handle = await open(target, constants.O_WRONLY).catch((error: unknown) => {
      if ((error as { code?: string }).code === "ENOENT") return null;
      throw error;
    });
    if (!handle) return false;
    try {
      if ((await handle.stat()).ino !== ino) return false;
      const bytes = Buffer.from(content);
      await handle.write(bytes, 0, bytes.length, 0);
      await handle.truncate(bytes.length);
      await handle.sync();
      return true;
    } finally {
      await handle.close();
    }
  },
  syncDir: (target) => fsyncDir(target),
  readFile: (target) => readFile(target, "utf8"),
  fingerprint: async (target) => {
    const handle = await open(target, constants.O_RDONLY);
    try {
      const { size } = await handle.stat();
      const tail = Buffer.alloc(Math.min(size, TAIL_BYTES));
      await handle.read(tail, 0, tail.length, size - tail.length);
      return { size, tail: tail.toString("hex") };
    } finally {
      await handle.close();
    }
  },
  removeTree: (target) => rm(target, { recursive: true, force: true, maxRetries: 3 }),
};
