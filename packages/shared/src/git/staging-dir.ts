/**
 * Apply's staging directory, `<git dir>/reclaim-apply-<uuid>`: the decrypted payload lives
 * there until the apply ends, when it is removed. An apply killed outright (SIGKILL, power
 * loss) cannot remove it, so each one records its process (`owner`, process-identity.ts) and
 * every later apply in the same git dir removes the directories whose process no longer runs
 * (and, after ten minutes, one whose owner record was never written).
 */
import { randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { currentProcess, livenessOf, type ProcessIdentity } from "../quarantine/process-identity";

const PREFIX = "reclaim-apply-";
const UNRECORDED_GRACE_MS = 10 * 60_000;

export async function makeStaging(gitDir: string): Promise<string> {
  const staging = path.join(gitDir, `${PREFIX}${randomUUID()}`);
  await mkdir(staging, { mode: 0o700 });
  const owner = { ...currentProcess(), createdAt: Date.now() };
  await writeFile(path.join(staging, "owner"), JSON.stringify(owner), { mode: 0o600 });
  return staging;
}

/** Removes the staging directories of applies that died; never one of a live (or unknown) process. */
export async function sweepStaleStaging(gitDir: string): Promise<string[]> {
  const removed: string[] = [];
  const names = await readdir(gitDir).catch(() => [] as string[]);
  for (const name of names.filter((n) => n.startsWith(PREFIX))) {
    const dir = path.join(gitDir, name);
    const owner = await readFile(path.join(dir, "owner"), "utf8").then(
      (text) => JSON.parse(text) as ProcessIdentity & { createdAt: number },
      () => null,
    );
    let dead: boolean;
    if (owner === null) {
      const info = await stat(dir).catch(() => null);
      dead = info !== null && Date.now() - info.mtimeMs > UNRECORDED_GRACE_MS;
    } else {
      dead = (await livenessOf(owner, (file) => readFile(file, "utf8"))) === "dead";
    }
    if (dead) {
      await rm(dir, { recursive: true, force: true });
      removed.push(name);
    }
  }
  return removed;
}
