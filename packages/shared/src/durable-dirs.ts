/**
 * Directory entries that survive a power loss. A file that was fsynced can still vanish after
 * a crash if the entry naming it, or a directory on its path that was just created, was never
 * written out: that takes an fsync of each directory whose entries changed.
 */
import { lstat, mkdir, open } from "node:fs/promises";
import path from "node:path";
import { errnoCode } from "./errors";

/** Sees every path fsynced (test hook, never set in production). */
export type FsyncObserver = (target: string) => void;

/** fsyncs the directory `target`, so the entries it holds are durable. */
export async function fsyncDir(target: string, observe?: FsyncObserver): Promise<void> {
  const handle = await open(target, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  observe?.(target);
}

/**
 * Creates `dir` and any missing parents with `mode`, then fsyncs the parent of every level it
 * created, top down, so the new directories are durable before anything is put in them.
 */
export async function mkdirDurable(dir: string, mode: number, observe?: FsyncObserver): Promise<void> {
  const first = await mkdir(dir, { recursive: true, mode });
  if (first === undefined) return; // nothing was created
  const created: string[] = [];
  for (let level = path.resolve(dir); ; level = path.dirname(level)) {
    created.unshift(level);
    if (level === path.resolve(first) || level === path.dirname(level)) break;
  }
  for (const level of created) await fsyncDir(path.dirname(level), observe);
}

export type PathBelow =
  { status: "ok" } | { status: "missing" } | { status: "symlink" | "not_a_directory"; at: string };

/**
 * Walks from `base` (which must exist) down to `dir`, one level at a time and never through a
 * symbolic link: each level is lstat'ed before anything is created under it, so a link planted
 * at any level stops the walk before a single directory is made on the far side of it. With
 * `create`, missing levels are made with `mode` and fsynced into their parents; without it the
 * walk stops at the first missing level (`missing`).
 */
export async function dirsBelow(
  base: string,
  dir: string,
  options: { create: boolean; mode?: number; observe?: FsyncObserver },
): Promise<PathBelow> {
  const rel = path.relative(base, dir);
  if (rel.startsWith("..") || path.isAbsolute(rel)) throw new Error(`BUG: ${dir} is not below ${base}`);
  let at = base;
  for (const part of rel === "" ? [] : rel.split(path.sep)) {
    at = path.join(at, part);
    const info = await lstat(at).catch((error: unknown) => {
      if (errnoCode(error) === "ENOENT") return null;
      throw error;
    });
    if (info === null) {
      if (!options.create) return { status: "missing" };
      try {
        await mkdir(at, { mode: options.mode ?? 0o700 });
      } catch (error) {
        // Made meanwhile by another writer: judged like any existing level.
        if (errnoCode(error) !== "EEXIST") throw error;
        const now = await lstat(at);
        if (now.isSymbolicLink()) return { status: "symlink", at };
        if (!now.isDirectory()) return { status: "not_a_directory", at };
        continue;
      }
      await fsyncDir(path.dirname(at), options.observe);
      continue;
    }
    if (info.isSymbolicLink()) return { status: "symlink", at };
    if (!info.isDirectory()) return { status: "not_a_directory", at };
  }
  return { status: "ok" };
}
