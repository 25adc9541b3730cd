/**
 * Run by faults.test.ts as a separate process, which the test kills with SIGKILL while git
 * writes objects: `capture <worktree> <tmpDir>` or `apply <target> <job.json>`.
 */
import { readFile } from "node:fs/promises";
import {
  applyPayload,
  captureWorktree,
  createLocalDiskProvider,
  fingerprintOf,
  open,
  StorageKey,
} from "../../src";

async function main(): Promise<void> {
  const [mode, dir, arg] = process.argv.slice(2) as [string, string, string];
  if (mode === "capture") {
    const capture = await captureWorktree(dir, { base: { kind: "remote" }, tmpDir: arg });
    for await (const chunk of capture.stream) void chunk;
    return;
  }
  const job = JSON.parse(await readFile(arg, "utf8"));
  const storage = createLocalDiskProvider({ baseDir: job.storage });
  const key = Buffer.from(job.key, "hex");
  const instanceKey = { key, fingerprint: fingerprintOf(key), source: "env" as const };
  const storageKey = StorageKey.of(job.stored.storageKey.companyId, job.stored.storageKey.relativeKey);
  await applyPayload(dir, () => open(storage, storageKey, instanceKey), job.stored.manifest);
}

void main().then(
  () => process.exit(3), // never reached: the test kills this process first
  () => process.exit(4),
);
