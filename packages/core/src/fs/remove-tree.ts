/**
 * Deleting a tree and counting what it held in the same walk, without ever following a
 * symbolic link: every entry is lstat'ed before it is removed (its allocated bytes are
 * counted then), a link is unlinked as itself and never descended into, a directory is
 * listed, emptied and removed. One walk instead of `treeStats` then `fs.rm` (which lstats
 * every entry again): a removal reads each entry once.
 *
 * The caller proves the directories above `root` (proven-dir.ts) and confirms them right
 * before the call, as for `fs.rm`. The bytes are those of the entries actually removed: an
 * entry gone meanwhile is not counted, one that could not be removed is not either (the error
 * is thrown, like `fs.rm`'s, after the same retries: EBUSY, EMFILE, ENFILE, ENOTEMPTY, EPERM,
 * twice, 100 ms then 200 ms later).
 */
import type { Stats } from "node:fs";
import { lstat, readdir, rmdir, unlink } from "./calls";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { errnoCode } from "@reclaim/shared";
import { BOUNDED_WIDTH } from "./in-order";

const RETRIES = 2;
const RETRY_DELAY_MS = 100;
const RETRYABLE = new Set(["EBUSY", "EMFILE", "ENFILE", "ENOTEMPTY", "EPERM"]);

const gone = (error: unknown) => errnoCode(error) === "ENOENT";

async function lstatOrNull(at: string): Promise<Stats | null> {
  try {
    return await lstat(at);
  } catch (error) {
    if (gone(error)) return null;
    throw error;
  }
}

/** Removes `at` (lstat'ed as `info`) and everything below it; adds what it removed to `freed`. */
async function removeEntry(at: string, info: Stats, freed: { bytes: number }): Promise<void> {
  if (info.isDirectory()) {
    let names: string[];
    try {
      names = await readdir(at);
    } catch (error) {
      if (gone(error)) return;
      throw error;
    }
    let next = 0;
    const worker = async () => {
      while (next < names.length) {
        const child = path.join(at, names[next++]!);
        const childInfo = await lstatOrNull(child);
        if (childInfo !== null) await removeEntry(child, childInfo, freed);
      }
    };
    // Every worker finishes before a failure is thrown: a retry never overlaps this walk.
    const results = await Promise.allSettled(
      Array.from({ length: Math.min(BOUNDED_WIDTH, names.length) }, worker),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason as Error;
  }
  try {
    // rmdir and unlink act on the entry itself: a link is removed, never followed.
    await (info.isDirectory() ? rmdir(at) : unlink(at));
  } catch (error) {
    if (gone(error)) return;
    throw error;
  }
  freed.bytes += info.blocks * 512;
}

/**
 * Deletes `root` (lstat'ed by the caller as `rootStat`; a link is unlinked, not followed) and
 * everything below it; returns the allocated bytes (st_blocks x 512) it removed.
 */
export async function removeTree(root: string, rootStat: Stats): Promise<number> {
  const freed = { bytes: 0 };
  let info: Stats | null = rootStat;
  for (let attempt = 0; info !== null; attempt++) {
    try {
      await removeEntry(root, info, freed);
      break;
    } catch (error) {
      const code = errnoCode(error);
      if (attempt >= RETRIES || code === undefined || !RETRYABLE.has(code)) throw error;
      await sleep(RETRY_DELAY_MS * (attempt + 1));
      // What is left of it (a new entry written meanwhile, a busy one).
      info = await lstatOrNull(root);
    }
  }
  return freed.bytes;
}
