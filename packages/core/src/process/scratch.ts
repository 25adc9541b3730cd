/**
 * A process's scratch space for its work files (a git capture's helper repository and bundle,
 * a restore's fetch): one directory per process in the system's temporary folder, named for
 * the process that owns it, `reclaim-<pid>-<start ms>-<random>` (the start time as
 * /proc tells every reader, 0 when it cannot be read), made with mode 0700 by `mkdtemp`.
 *
 * A process killed mid-capture cannot clean up after itself: `sweepScratch` (every worker at
 * its start) removes the scratch directories whose owner is gone, and never one whose owner
 * can still be using it (liveness.ts: its pid alive with the recorded start time, or a start
 * time that cannot be read: kept, fail closed). A link or a file carrying such a name is left
 * alone; only real directories are removed, and `rm` never follows links below them.
 */
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  hostProcessProbe,
  namedProcessIsLive,
  ownProcess,
  PROCESS_TAG,
  processTag,
  taggedProcess,
  type ProcessProbe,
} from "./liveness";

const SCRATCH_NAME = new RegExp(`^reclaim-${PROCESS_TAG}-[A-Za-z0-9]{6}$`);

const made = new Map<string, Promise<string>>();

const isDirectory = (at: string): Promise<boolean> =>
  stat(at).then(
    (s) => s.isDirectory(),
    () => false,
  );

/**
 * This process's scratch directory in `root` (default the system's temporary folder): made at
 * the first call, and made anew when it is gone. (Another process's sweep can misjudge this one
 * as gone when its start time reads differently, after the clock was stepped: the capture under
 * way then fails and is retried, and the next one gets a new directory.)
 */
export async function scratchDir(root: string = os.tmpdir()): Promise<string> {
  const known = made.get(root);
  if (known) {
    const dir = await known.catch(() => null);
    if (dir !== null && (await isDirectory(dir))) return dir;
    if (made.get(root) !== known) return scratchDir(root);
  }
  const dir = mkdtemp(path.join(root, `reclaim-${processTag(ownProcess())}-`));
  made.set(root, dir);
  // A failed attempt (a full disk) is tried again by the next caller.
  dir.catch(() => made.get(root) === dir && made.delete(root));
  return dir;
}

/**
 * Removes the scratch directories in `root` of processes that are gone (a kill -9 mid-capture);
 * returns their names. This process's own is live, and kept like any other live one's. One that
 * cannot be removed now is left for the next sweep.
 */
export async function sweepScratch(
  root: string = os.tmpdir(),
  probe: ProcessProbe = hostProcessProbe,
): Promise<string[]> {
  const removed: string[] = [];
  for (const entry of await readdir(root, { withFileTypes: true })) {
    const match = SCRATCH_NAME.exec(entry.name);
    if (!match || !entry.isDirectory()) continue;
    if (namedProcessIsLive(taggedProcess(match[1]!, match[2]!), probe)) continue;
    try {
      await rm(path.join(root, entry.name), { recursive: true, force: true });
      removed.push(entry.name);
    } catch {
      // Left for the next sweep.
    }
  }
  return removed;
}
