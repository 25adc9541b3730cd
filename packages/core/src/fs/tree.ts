/**
 * Reading a tree without ever following a symbolic link: every entry is lstat'ed, links are
 * counted as links, and a walk never descends through one.
 */
import type { Stats } from "node:fs";
import { lstat, readdir } from "./calls";
import path from "node:path";
import { errnoCode } from "@reclaim/shared";

export type EntryKind = "directory" | "file" | "symlink" | "other" | "missing";

export interface Identity {
  dev: number;
  ino: number;
}

export interface TreeStats {
  /** Allocated bytes (st_blocks x 512), what removal frees; not file sizes. */
  allocatedBytes: number;
  /** Newest modification time of any entry, the root included (ms since epoch). */
  newestMtimeMs: number;
  entries: number;
}

/** What an lstat says an entry is (null: it is missing). */
export function kindOf(info: Stats | null): EntryKind {
  if (info === null) return "missing";
  if (info.isSymbolicLink()) return "symlink";
  if (info.isDirectory()) return "directory";
  if (info.isFile()) return "file";
  return "other";
}

/**
 * What the entry at `target` is, by lstat (its last component is never followed). Only the
 * last component: a caller below a top folder proves the levels above with proven-dir.ts.
 */
export async function entryKind(target: string): Promise<EntryKind> {
  try {
    return kindOf(await lstat(target));
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return "missing";
    throw error;
  }
}

export function sameIdentity(a: Identity | null, b: Identity | null): boolean {
  return a !== null && b !== null && a.dev === b.dev && a.ino === b.ino;
}

/**
 * Walks `root` (which must not be a symlink: its own lstat is counted, never followed; pass it
 * when the caller already has it). The caller proves the directories above `root`
 * (proven-dir.ts) and confirms them after the walk.
 */
export async function treeStats(root: string, signal?: AbortSignal, rootStat?: Stats): Promise<TreeStats> {
  const own = rootStat ?? (await lstat(root));
  const stats: TreeStats = {
    allocatedBytes: own.blocks * 512,
    newestMtimeMs: own.mtimeMs,
    entries: 1,
  };
  if (!own.isDirectory()) return stats;
  const pending = [root];
  while (pending.length > 0) {
    signal?.throwIfAborted();
    const dir = pending.pop()!;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") continue;
      throw error;
    }
    for (const name of names) {
      const full = path.join(dir, name);
      let stat;
      try {
        stat = await lstat(full);
      } catch (error) {
        if (errnoCode(error) === "ENOENT") continue;
        throw error;
      }
      stats.entries += 1;
      stats.allocatedBytes += stat.blocks * 512;
      if (stat.mtimeMs > stats.newestMtimeMs) stats.newestMtimeMs = stat.mtimeMs;
      if (stat.isDirectory()) pending.push(full);
    }
  }
  return stats;
}
