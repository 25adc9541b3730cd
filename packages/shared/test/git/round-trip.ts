/**
 * capture -> seal -> store -> open -> apply, and the comparison the Proof asks for:
 * `git status --porcelain=v2`, `git ls-files -s --debug` (without the stat fields a fresh
 * checkout cannot share), every file's bytes and mode, the reflog's commits and ORIG_HEAD.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import path from "node:path";
import {
  applyPayload,
  captureWorktree,
  createLocalDiskProvider,
  fingerprintOf,
  open,
  parseManifest,
  seal,
  serializeManifest,
  StorageKey,
  type ApplyOptions,
  type ApplyResult,
  type CaptureOptions,
  type InstanceKey,
  type RestoreManifest,
  type SealedObject,
  type StorageProvider,
} from "../../src";
import { REGENERABLE_DIRECTORIES, isEnvFile } from "../../src/git/exclusions";
import { git } from "./fixture";

export function makeKey(): InstanceKey {
  const key = randomBytes(32);
  return { key, fingerprint: fingerprintOf(key), source: "env" };
}

export interface Stored {
  manifest: RestoreManifest;
  manifestJson: string;
  sealed: SealedObject;
  storageKey: StorageKey;
}

export async function captureAndStore(
  dir: string,
  storage: StorageProvider,
  instanceKey: InstanceKey,
  options: Partial<CaptureOptions> = {},
): Promise<Stored> {
  const capture = await captureWorktree(dir, { base: { kind: "remote" }, ...options });
  try {
    const storageKey = StorageKey.of(randomUUID(), `git-restore-points/ws/${randomUUID()}/payload`);
    const sealed = await seal(capture.stream, {
      instanceKey,
      storage,
      storageKey,
      plaintextSize: capture.payloadSize,
    });
    const manifest = await capture.manifest;
    const manifestJson = serializeManifest(manifest);
    return { manifest: parseManifest(manifestJson), manifestJson, sealed, storageKey };
  } finally {
    await capture.dispose();
  }
}

export function applyStored(
  target: string,
  storage: StorageProvider,
  instanceKey: InstanceKey,
  stored: Stored,
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  return applyPayload(target, () => open(storage, stored.storageKey, instanceKey), stored.manifest, options);
}

export function localStorage(root: string): StorageProvider {
  return createLocalDiskProvider({ baseDir: root });
}

/** Files below `dir` (not .git), with mode and content hash or link target; `.env` and regenerable dirs optional. */
export async function describeFiles(dir: string, options: { leaveOut?: boolean } = {}): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    const items = await readdir(path.join(dir, rel), { withFileTypes: true });
    for (const item of items.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const child = rel ? `${rel}/${item.name}` : item.name;
      if (child === ".git") continue;
      if (options.leaveOut && (isEnvFile(child) || REGENERABLE_DIRECTORIES.has(item.name))) continue;
      const full = path.join(dir, child);
      const stat = await lstat(full);
      if (stat.isSymbolicLink()) out.push(`link ${child} -> ${await readlink(full)}`);
      else if (stat.isDirectory()) await walk(child);
      else {
        const hash = createHash("sha256")
          .update(await readFile(full))
          .digest("hex");
        out.push(`file ${(stat.mode & 0o7777).toString(8)} ${hash} ${child}`);
      }
    }
  };
  await walk("");
  return out;
}

/** ls-files -s --debug without ctime/mtime/dev/ino/uid/gid (a fresh checkout cannot share them). */
export async function indexDebug(dir: string): Promise<string> {
  const out = await git(dir, ["ls-files", "-s", "--debug"]);
  return out
    .split("\n")
    .filter((line) => !/^\s+(ctime|mtime|dev|uid):/.test(line))
    .join("\n");
}

export async function repoFacts(
  dir: string,
  options: { leaveOut?: boolean } = {},
): Promise<Record<string, unknown>> {
  const run = (args: string[]) => git(dir, args).catch((e: Error) => `error: ${e.message.split("\n")[0]}`);
  return {
    status: await run([
      "status",
      "--porcelain=v2",
      "--untracked-files=all",
      "--ignored=matching",
      "--branch",
    ]).then((s) =>
      s
        .split("\n")
        .filter(
          (l) =>
            !l.startsWith("# branch.upstream") &&
            !l.startsWith("# branch.ab") &&
            !(options.leaveOut && /^[?!] (.*\/)?\.env/.test(l)),
        )
        .filter(
          (l) =>
            !(
              options.leaveOut &&
              l.startsWith("! ") &&
              [...REGENERABLE_DIRECTORIES].some((d) => l.includes(`${d}/`))
            ),
        )
        .join("\n"),
    ),
    index: await indexDebug(dir),
    files: await describeFiles(dir, options),
    head: (await run(["rev-parse", "HEAD"])).trim(),
    branch: (await run(["symbolic-ref", "-q", "HEAD"])).trim(),
    reflog: (await run(["log", "-g", "--format=%H %gs", "HEAD"])).trim(),
    origHead: (await run(["rev-parse", "-q", "--verify", "ORIG_HEAD"])).trim(),
  };
}

/** The capture's manifest without storing the payload (the stream is drained). */
export async function captureManifest(
  dir: string,
  options: Partial<CaptureOptions> = {},
): Promise<RestoreManifest> {
  const capture = await captureWorktree(dir, { base: { kind: "remote" }, ...options });
  try {
    for await (const chunk of capture.stream) void chunk;
    return await capture.manifest;
  } finally {
    await capture.dispose();
  }
}

/** A clone of a fresh remote with an unpushed commit, a modified file and an untracked file. */
export async function busyWorktree(
  root: string,
): Promise<{ work: string; remote: { bare: string; seed: string } }> {
  const { makeRemote, clone } = await import("./fixture");
  const remote = await makeRemote(root, { "a.txt": "a\n", "b.txt": "b\n", "c.sh": "echo\n" });
  const work = await clone(remote, path.join(root, "work"));
  const { writeFile } = await import("node:fs/promises");
  await writeFile(path.join(work, ".gitignore"), "*.log\n");
  await git(work, ["add", ".gitignore"]);
  await git(work, ["commit", "-q", "-m", "unpushed"]);
  await writeFile(path.join(work, "a.txt"), "a changed\n");
  await writeFile(path.join(work, "new.txt"), "untracked\n");
  await writeFile(path.join(work, "kept.log"), "ignored\n");
  return { work, remote };
}
