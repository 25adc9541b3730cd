/**
 * Apply: puts a restore point back into a fresh clone or a fresh worktree of a shared clone.
 *
 * Lifecycle:
 *
 *  1. Read the target. Already exactly the captured state: `already_applied`, nothing done.
 *  2. Fail closed, target untouched, on a target that diverged (RECLAIM_ERR_GIT_APPLY_DIVERGED,
 *     retryable): tracked changes or untracked files, or a HEAD or branch whose commit is
 *     neither on a remote-tracking ref nor the captured one (moving it could lose work).
 *  3. Read the whole payload into a staging directory inside the target's git dir. A payload
 *     that is missing, cut off, tampered with or sealed with another key rejects here with
 *     the seal's (or storage's) error, before anything in the target changed; so does a
 *     payload that is not the manifest's (bundle hash, section hashes, tree digests).
 *  4. `git bundle verify` (the base must be there: RECLAIM_ERR_GIT_APPLY_BASE_MISSING), then
 *     `git bundle unbundle` inside `withObjectQuarantine`, publishing the objects and, in one
 *     checked transaction, the scope's branches.
 *  5. `git read-tree -u --reset <saved commit>`, HEAD set to the saved branch (or detached).
 *  6. Tracked changes and deletions, then untracked files (tree-snapshot restore: never
 *     replaces, never follows links), then ignored files: restored into staging and linked in
 *     one by one; an ignored file that already exists is kept, never overwritten (reported).
 *  7. The index exactly (entries, modes, stages, intent-to-add), written through
 *     `index.lock`, then refreshed; the HEAD reflog (with its reflog-only commits), ORIG_HEAD
 *     and the branches' reflogs written back.
 *  8. The target is read again and must match the manifest (remote-tracking refs aside);
 *     otherwise RECLAIM_ERR_GIT_APPLY_FAILED with the differences.
 */
import { createHash, randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { chmod, link, lstat, mkdir, open, readdir, readFile, rename, rm, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { withObjectQuarantine } from "../quarantine/quarantine";
import { restoreSnapshot, validateSnapshot } from "../tree-snapshot";
import { GitRestoreError } from "./errors";
import { writeIndex, type IndexEntry } from "./index-file";
import { sha256, type RestoreManifest } from "./manifest";
import { stagePayload } from "./payload";
import { openSafeRepository, quarantineBaseEnv, type SafeRepository } from "./safe-git";
import { compareReading, readLive, type Difference } from "./verify";
import type { WorktreeState } from "./worktree-state";

export type ApplyResult =
  | { status: "already_applied" }
  | { status: "applied"; keptIgnored: string[] };

export interface ApplyOptions {
  inherited?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  timeoutMs?: number;
}

const READ_LIMITS = { maxFiles: 10_000_000, maxFileBytes: Number.MAX_SAFE_INTEGER, maxTotalBytes: Number.MAX_SAFE_INTEGER };
const ZERO = "0000000000000000000000000000000000000000";

function diverged(detail: string): GitRestoreError {
  return new GitRestoreError("RECLAIM_ERR_GIT_APPLY_DIVERGED", detail);
}

/**
 * `payload` is the opened (decrypted) stream, or a function that opens it (so a missing
 * object fails inside, after the target was checked).
 */
export async function applyPayload(
  target: string,
  payload: Readable | (() => Promise<Readable>),
  manifest: RestoreManifest,
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const repo = await openSafeRepository(target, options);
  const worktree = repo.worktree;
  if (worktree === undefined) throw new GitRestoreError("RECLAIM_ERR_GIT_NOT_A_REPOSITORY", `${target} is bare`);

  const live = await readLive(repo, manifest);
  if ("kind" in live) throw diverged(live.detail);
  if (compareReading(manifest, live, { remoteTracking: true }).length === 0) {
    if (typeof payload !== "function") payload.destroy();
    return { status: "already_applied" };
  }
  await refuseDiverged(repo, live.state, manifest);

  const staging = path.join(repo.gitDir, `reclaim-apply-${randomUUID()}`);
  await mkdir(staging, { mode: 0o700 });
  try {
    const stream = typeof payload === "function" ? await payload() : payload;
    await stagePayload(stream, staging);
    const sections = await checkStaged(staging, manifest);

    if (manifest.bundle) {
      const file = path.join(staging, "bundle");
      const verified = await repo.git(["bundle", "verify", "-q", file], { okCodes: [0, 1, 128] });
      if (verified.code !== 0) {
        throw new GitRestoreError("RECLAIM_ERR_GIT_APPLY_BASE_MISSING", verified.stderr.trim());
      }
    }
    const existing = new Map(live.state.refs.map((r) => [r.name, r.oid]));
    const currentRefs = await refOids(repo, manifest.refs.map((r) => r.name));
    await withObjectQuarantine(
      worktree,
      "restore-apply",
      async (ctx) => {
        if (manifest.bundle) await ctx.git(["bundle", "unbundle", path.join(staging, "bundle")]);
        for (const ref of manifest.refs) {
          const old = currentRefs.get(ref.name) ?? existing.get(ref.name);
          if (old !== ref.oid) ctx.updateRefAfterPublish(ref.name, ref.oid, old ?? ZERO);
        }
      },
      { env: quarantineBaseEnv(repo), signal: options.signal, timeoutMs: options.timeoutMs },
    );

    await repo.git(["read-tree", "-u", "--reset", manifest.head.oid]);
    if (manifest.head.ref) await repo.git(["symbolic-ref", "HEAD", manifest.head.ref]);
    else await repo.git(["update-ref", "--no-deref", "HEAD", manifest.head.oid]);

    const snapshotOptions = { limits: READ_LIMITS, durable: false };
    for (const file of [...sections.index.tracked, ...sections.index.deleted]) {
      await unlink(path.join(worktree, file)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
      });
    }
    await restoreSnapshot(createReadStream(path.join(staging, "tracked")), worktree, {
      ...snapshotOptions,
      expectedTreeDigest: manifest.tracked.treeDigest,
    });
    await restoreSnapshot(createReadStream(path.join(staging, "untracked")), worktree, {
      ...snapshotOptions,
      expectedTreeDigest: manifest.untracked.treeDigest,
    });
    const ignoredTree = path.join(staging, "ignored-tree");
    await mkdir(ignoredTree, { mode: 0o700 });
    await restoreSnapshot(createReadStream(path.join(staging, "ignored")), ignoredTree, {
      ...snapshotOptions,
      expectedTreeDigest: manifest.ignored.treeDigest,
    });
    const keptIgnored: string[] = [];
    await linkInWithoutReplacing(ignoredTree, worktree, "", keptIgnored);

    await writeIndexFile(repo, sections.index.entries);
    await repo.git(["update-index", "-q", "--refresh"], { okCodes: [0, 1] });
    await writeHistory(repo, sections.history);

    const after = await readLive(repo, manifest);
    const differences: Difference[] =
      "kind" in after ? [after] : compareReading(manifest, after, { remoteTracking: true, ignored: keptIgnored.length > 0 });
    if (differences.length > 0) {
      throw new GitRestoreError(
        "RECLAIM_ERR_GIT_APPLY_FAILED",
        `the restored worktree differs: ${differences.map((d) => d.detail).join("; ")}`,
      );
    }
    return { status: "applied", keptIgnored };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function refOids(repo: SafeRepository, names: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (names.length === 0) return out;
  const listed = await repo.text(["for-each-ref", "--format=%(objectname) %(refname)", ...names]);
  for (const line of listed.split("\n").filter(Boolean)) {
    const space = line.indexOf(" ");
    out.set(line.slice(space + 1), line.slice(0, space));
  }
  return out;
}

/** A commit the target holds that moving a ref away from could lose. */
async function atRisk(repo: SafeRepository, oid: string, manifest: RestoreManifest): Promise<boolean> {
  if (oid === manifest.head.oid || manifest.refs.some((r) => r.oid === oid)) return false;
  const onRemote = await repo.text(["for-each-ref", "--count=1", "--contains", oid, "refs/remotes/"]);
  return onRemote.trim() === "";
}

async function refuseDiverged(
  repo: SafeRepository,
  state: WorktreeState,
  manifest: RestoreManifest,
): Promise<void> {
  if (state.trackedStatus.length > 0) throw diverged(`tracked changes (${state.trackedStatus.length})`);
  if (state.untracked.length > 0) throw diverged(`untracked files: ${state.untracked.slice(0, 5).join(", ")}`);
  if (await atRisk(repo, state.head.oid, manifest)) throw diverged(`HEAD ${state.head.oid} is on no remote-tracking ref`);
  const current = await refOids(repo, manifest.refs.map((r) => r.name));
  for (const ref of manifest.refs) {
    const oid = current.get(ref.name);
    if (oid !== undefined && oid !== ref.oid && (await atRisk(repo, oid, manifest))) {
      throw diverged(`${ref.name} is at ${oid}, which no remote-tracking ref holds`);
    }
  }
}

interface StagedIndex {
  version: number;
  entries: IndexEntry[];
  deleted: string[];
  tracked: string[];
}
interface StagedHistory {
  headReflog: string;
  origHead: string | null;
  refReflogs: { name: string; log: string }[];
}

/** The staged payload is the manifest's: hashes of the bundle and sections, tree digests. */
async function checkStaged(staging: string, manifest: RestoreManifest): Promise<{ index: StagedIndex; history: StagedHistory }> {
  const invalid = (what: string): GitRestoreError =>
    new GitRestoreError("RECLAIM_ERR_GIT_PAYLOAD_INVALID", `${what} does not match the manifest`);
  const indexRaw = await readFile(path.join(staging, "index"));
  const historyRaw = await readFile(path.join(staging, "history"));
  if (sha256(indexRaw) !== manifest.sections.indexSha256) throw invalid("index section");
  if (sha256(historyRaw) !== manifest.sections.historySha256) throw invalid("history section");
  if (manifest.bundle) {
    const hash = createHash("sha256");
    for await (const chunk of createReadStream(path.join(staging, "bundle"))) hash.update(chunk as Buffer);
    if (hash.digest("hex") !== manifest.bundle.sha256) throw invalid("bundle");
  }
  for (const name of ["tracked", "untracked", "ignored"] as const) {
    await validateSnapshot(createReadStream(path.join(staging, name)), {
      limits: READ_LIMITS,
      expectedTreeDigest: manifest[name].treeDigest,
    }).catch((error: unknown) => {
      throw new GitRestoreError("RECLAIM_ERR_GIT_PAYLOAD_INVALID", `${name} files: ${(error as Error).message}`, {
        cause: error,
      });
    });
  }
  return { index: JSON.parse(indexRaw.toString("utf8")) as StagedIndex, history: JSON.parse(historyRaw.toString("utf8")) as StagedHistory };
}

/** Moves `from/rel` into `to/rel` by hard links; an existing entry is kept (listed), never replaced. */
async function linkInWithoutReplacing(from: string, to: string, rel: string, kept: string[]): Promise<void> {
  for (const item of await readdir(path.join(from, rel), { withFileTypes: true })) {
    const child = rel === "" ? item.name : `${rel}/${item.name}`;
    const source = path.join(from, child);
    const dest = path.join(to, child);
    if (item.isDirectory()) {
      const there = await lstat(dest).catch(() => null);
      if (there === null) {
        await mkdir(dest);
        await linkInWithoutReplacing(from, to, child, kept);
        await chmod(dest, (await lstat(source)).mode & 0o7777);
      } else if (there.isDirectory()) {
        await linkInWithoutReplacing(from, to, child, kept);
      } else {
        kept.push(child);
      }
    } else {
      await link(source, dest).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
        kept.push(child);
      });
    }
  }
}

async function blobSizes(repo: SafeRepository, entries: IndexEntry[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  const oids = [...new Set(entries.filter((e) => !e.intentToAdd).map((e) => e.oid))];
  if (oids.length === 0) return sizes;
  const out = await repo.text(["cat-file", "--batch-check=%(objectname) %(objectsize)"], { input: oids.join("\n") + "\n" });
  for (const line of out.split("\n")) {
    const [oid, size] = line.split(" ");
    if (oid && size && /^\d+$/.test(size)) sizes.set(oid, Number(size));
  }
  return sizes;
}

async function writeIndexFile(repo: SafeRepository, entries: IndexEntry[]): Promise<void> {
  const lock = path.join(repo.gitDir, "index.lock");
  const handle = await open(lock, "wx", 0o644);
  try {
    await handle.writeFile(writeIndex(entries, repo.objectFormat, await blobSizes(repo, entries)));
  } catch (error) {
    await handle.close();
    await unlink(lock).catch(() => undefined);
    throw error;
  }
  await handle.close();
  await rename(lock, path.join(repo.gitDir, "index"));
}

async function writeHistory(repo: SafeRepository, history: StagedHistory): Promise<void> {
  const write = async (file: string, data: Buffer): Promise<void> => {
    await mkdir(path.dirname(file), { recursive: true });
    const temp = `${file}.reclaim-${randomUUID()}`;
    await writeFile(temp, data, { flag: "wx", mode: 0o644 });
    await rename(temp, file);
  };
  await write(path.join(repo.gitDir, "logs", "HEAD"), Buffer.from(history.headReflog, "base64"));
  const orig = path.join(repo.gitDir, "ORIG_HEAD");
  if (history.origHead) await write(orig, Buffer.from(`${history.origHead}\n`));
  else await unlink(orig).catch(() => undefined);
  for (const log of history.refReflogs) {
    await write(path.join(repo.commonDir, "logs", log.name), Buffer.from(log.log, "base64"));
  }
}
