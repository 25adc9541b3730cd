/**
 * Directory entries that survive a power loss. A file that was fsynced can still vanish after
 * a crash if the entry naming it, or a directory on its path that was just created, was never
 * written out: that takes an fsync of each directory whose entries changed.
 */
import { mkdir, open } from "node:fs/promises";
import path from "node:path";

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
