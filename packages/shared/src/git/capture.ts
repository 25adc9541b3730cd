/**
 * Capture: turns what a worktree's remote cannot reproduce into a restore-point payload.
 *
 * Lifecycle:
 *
 *  1. `captureWorktree(dir, {base, scope, limits})` reads the worktree (worktree-state.ts),
 *     refuses what cannot be restored exactly (CaptureRefusedError with the spec's reason),
 *     establishes the base, writes the bundle and plans the three file snapshots. Resolves
 *     with `{ payloadSize, stream, manifest, dispose }`.
 *  2. The caller pipes `stream` into `seal()` with `plaintextSize: payloadSize` (constant
 *     memory: files are read in bounded chunks as the seal consumes them).
 *  3. `manifest` resolves once the stream has ended: the digests of the file snapshots are
 *     of the bytes actually sent. A file that changed while it was read errors the stream
 *     (RECLAIM_ERR_GIT_CAPTURE_CHANGED); discard the sealed object and try later.
 *  4. `dispose()` removes the temporary directory (bundle, helper repository).
 *
 * The base ("remote-verified"): `remote` lists the remote fresh (`git ls-remote`, run outside
 * the repository); `remote-tracking` trusts `refs/remotes/*` (the caller fetched just now);
 * `shared` takes every commit a shared clone's refs hold. Only base tips this repository
 * has count; the bundle holds every commit reachable from HEAD, ORIG_HEAD, every HEAD reflog
 * entry, the scope's branches (and tags) and their reflog entries (and for nested checkouts
 * the remote-tracking refs and their reflogs: history-only objects) that the base lacks, plus
 * one commit carrying the index's blobs that no commit has.
 *
 * No object is ever written into the workspace's repository: the bundle is built in a
 * throwaway bare repository whose `objects/info/alternates` points at the workspace's store,
 * so a capture killed at any point leaves the repository exactly as it was.
 *
 * Example:
 *
 *   const capture = await captureWorktree(dir, { base: { kind: "remote" } });
 *   try {
 *     const sealed = await seal(capture.stream, { instanceKey, storage, storageKey, plaintextSize: capture.payloadSize });
 *     const manifest = await capture.manifest;   // store serializeManifest(manifest) with `sealed`
 *   } finally { await capture.dispose(); }
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { encodeSnapshot, isTreeSnapshotError, planTree, type SnapshotSummary, type TreePlan } from "../tree-snapshot";
import { CaptureRefusedError, GitRestoreError, type RefusalReason } from "./errors";
import {
  MANIFEST_SCHEMA,
  sha256,
  stateDigests,
  type RestoreManifest,
  type TreeSection,
} from "./manifest";
import { payloadSize, payloadStream, type Section, type SectionName } from "./payload";
import { emptyDir, openSafeRepository, remoteEnv, runSafeGit, type SafeRepository } from "./safe-git";
import { readWorktreeState, type CaptureScope, type WorktreeState } from "./worktree-state";

export interface RestoreLimits {
  /** Files and links in the three snapshots together. */
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
  maxBundleBytes: number;
  maxCommits: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Restore points uploaded to file storage: the spec's restore-point limits. */
export const UPLOAD_LIMITS: RestoreLimits = {
  maxFiles: 20_000,
  maxFileBytes: 64 * MiB,
  maxTotalBytes: 256 * MiB,
  maxBundleBytes: 256 * MiB,
  maxCommits: 100_000,
};

/** Local transfers (rehome, nested-clone conversion): the spec's larger limits. */
export const LOCAL_TRANSFER_LIMITS: RestoreLimits = {
  maxFiles: 500_000,
  maxFileBytes: GiB,
  maxTotalBytes: GiB,
  maxBundleBytes: 1.5 * GiB,
  maxCommits: 1_000_000,
};

export type BaseSource =
  | { kind: "remote"; url?: string }
  | { kind: "remote-tracking" }
  | { kind: "shared"; repository: string };

export interface CaptureOptions {
  base: BaseSource;
  scope?: CaptureScope;
  /** Rules for nested `.paperclip-repositories` checkouts. Default false. */
  nested?: boolean;
  limits?: RestoreLimits;
  /** Where the bundle is written. Default os.tmpdir(). */
  tmpDir?: string;
  signal?: AbortSignal;
  /** The environment git variables are stripped from. Default process.env. */
  inherited?: NodeJS.ProcessEnv;
}

export interface Capture {
  payloadSize: number;
  stream: Readable;
  /** Resolves after `stream` ended; rejects if it failed. */
  manifest: Promise<RestoreManifest>;
  dispose(): Promise<void>;
}

export const ZERO_OID = /^0+$/;

export async function captureWorktree(dir: string, options: CaptureOptions): Promise<Capture> {
  const repo = await openSafeRepository(dir, { inherited: options.inherited, signal: options.signal });
  const scope: CaptureScope = options.scope ?? (repo.linked ? { kind: "worktree" } : { kind: "clone" });
  const nested = options.nested ?? false;
  const limits = options.limits ?? UPLOAD_LIMITS;
  const state = await readWorktreeState(repo, { scope, nested });
  await refuseFilteredPaths(repo, state);

  const tmp = await mkdtemp(path.join(options.tmpDir ?? os.tmpdir(), "reclaim-capture-"));
  const dispose = (): Promise<void> => rm(tmp, { recursive: true, force: true });
  try {
    const plans = await planSnapshots(repo.worktree!, state, limits);
    const { base, bundle } = await buildBundle(repo, state, { ...options, scope, nested, limits }, tmp);
    const digests = stateDigests(state);
    const indexJson = Buffer.from(
      JSON.stringify({
        version: state.index.version,
        entries: state.index.entries,
        deleted: state.deleted,
        tracked: state.trackedPresent,
      }),
    );
    const historyJson = Buffer.from(
      JSON.stringify({
        headReflog: state.headReflog.toString("base64"),
        origHead: state.origHead,
        refReflogs: state.refReflogs.map((l) => ({ name: l.name, log: l.log.toString("base64") })),
      }),
    );
    const summaries: Partial<Record<"tracked" | "untracked" | "ignored", Promise<SnapshotSummary>>> = {};
    const snapshotSection = (name: "tracked" | "untracked" | "ignored"): Section => ({
      size: plans[name].encodedSize,
      open: () => {
        const encoded = encodeSnapshot(plans[name], { signal: options.signal });
        summaries[name] = encoded.summary;
        return encoded.stream;
      },
    });
    const sections: Record<SectionName, Section> = {
      bundle: bundle
        ? { size: bundle.bytes, open: () => createReadStream(bundle.file) }
        : { size: 0, open: () => Readable.from([]) },
      index: { size: indexJson.length, open: () => Readable.from([indexJson]) },
      history: { size: historyJson.length, open: () => Readable.from([historyJson]) },
      tracked: snapshotSection("tracked"),
      untracked: snapshotSection("untracked"),
      ignored: snapshotSection("ignored"),
    };
    const stream = payloadStream(sections);
    const ended = new Promise<void>((resolve, reject) => {
      stream.once("end", resolve);
      stream.once("error", reject);
      stream.once("close", () => (stream.readableEnded ? resolve() : reject(new Error("payload stream closed early"))));
    });
    const treeSection = async (name: "tracked" | "untracked" | "ignored"): Promise<TreeSection> => {
      const summary = await summaries[name]!;
      return { files: summary.files, bytes: summary.fileBytes, treeDigest: summary.treeDigest };
    };
    const manifest = ended
      .then(async (): Promise<RestoreManifest> => ({
        schema: MANIFEST_SCHEMA,
        objectFormat: repo.objectFormat,
        scope,
        nested,
        head: digests.head,
        base,
        bundle: bundle
          ? { sha256: bundle.sha256, bytes: bundle.bytes, commits: bundle.commits, indexCarrier: bundle.indexCarrier }
          : null,
        refs: digests.refs,
        index: digests.index,
        tracked: { ...(await treeSection("tracked")), ...digests.tracked },
        untracked: await treeSection("untracked"),
        ignored: await treeSection("ignored"),
        history: digests.history,
        remoteTracking: digests.remoteTracking,
        sections: { indexSha256: sha256(indexJson), historySha256: sha256(historyJson) },
      }))
      .catch((error: unknown) => {
        throw isTreeSnapshotError(error, "changed_during_capture")
          ? new GitRestoreError("RECLAIM_ERR_GIT_CAPTURE_CHANGED", (error as Error).message, { cause: error })
          : error;
      });
    manifest.catch(() => undefined);
    return { payloadSize: payloadSize(sections), stream, manifest, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

const SNAPSHOT_REASONS: Partial<Record<string, RefusalReason>> = {
  too_many_files: "restore_point_too_many_files",
  file_too_large: "restore_point_file_too_large",
  too_large: "restore_point_too_large",
  unsupported_filesystem_entry: "special_file",
  unsafe_path: "special_file",
};

async function planSnapshots(
  worktree: string,
  state: WorktreeState,
  limits: RestoreLimits,
): Promise<Record<"tracked" | "untracked" | "ignored", TreePlan>> {
  const snapshotLimits = { maxFiles: limits.maxFiles, maxFileBytes: limits.maxFileBytes, maxTotalBytes: limits.maxTotalBytes };
  const plan = async (paths: string[]): Promise<TreePlan> => {
    try {
      return await planTree(worktree, { selection: { kind: "paths", paths }, limits: snapshotLimits });
    } catch (error) {
      if (isTreeSnapshotError(error)) {
        const reason = SNAPSHOT_REASONS[error.reason];
        if (reason) throw new CaptureRefusedError(reason, error.entryPath === null ? [] : [error.entryPath], error.message);
        throw new GitRestoreError("RECLAIM_ERR_GIT_CAPTURE_CHANGED", error.message, { cause: error });
      }
      throw error;
    }
  };
  const plans = {
    tracked: await plan(state.trackedPresent),
    untracked: await plan(state.untracked),
    ignored: await plan(state.ignored),
  };
  const files = plans.tracked.entries.length + plans.untracked.entries.length + plans.ignored.entries.length;
  if (files > limits.maxFiles) throw new CaptureRefusedError("restore_point_too_many_files", [], `${files} entries`);
  const bytes = plans.tracked.fileBytes + plans.untracked.fileBytes + plans.ignored.fileBytes;
  if (bytes > limits.maxTotalBytes) throw new CaptureRefusedError("restore_point_too_large", [], `${bytes} bytes`);
  return plans;
}

/** Paths with a `filter` attribute cannot be restored byte for byte without running it. */
async function refuseFilteredPaths(repo: SafeRepository, state: WorktreeState): Promise<void> {
  const paths = [...new Set([...state.index.entries.map((e) => e.path), ...state.untracked])];
  if (paths.length === 0) return;
  const out = await repo.git(["check-attr", "-z", "--stdin", "filter"], { input: paths.join("\0") + "\0" });
  const fields = out.stdout.toString("utf8").split("\0");
  const filtered: string[] = [];
  for (let i = 0; i + 2 < fields.length; i += 3) {
    if (fields[i + 2] !== "unspecified" && fields[i + 2] !== "unset") filtered.push(fields[i]!);
  }
  if (filtered.length > 0) throw new CaptureRefusedError("filtered_path", filtered);
}

interface BuiltBundle {
  file: string;
  bytes: number;
  sha256: string;
  commits: number;
  indexCarrier: string | null;
}

function reflogOids(log: Buffer): string[] {
  const oids: string[] = [];
  for (const line of log.toString("utf8").split("\n")) {
    const [oldOid, newOid] = line.split(" ", 2);
    for (const oid of [oldOid, newOid]) if (oid && /^[0-9a-f]{40,64}$/.test(oid) && !ZERO_OID.test(oid)) oids.push(oid);
  }
  return oids;
}

/** `oid -> type` for the oids that exist in the repository. */
async function objectTypes(repo: SafeRepository, oids: string[]): Promise<Map<string, string>> {
  const types = new Map<string, string>();
  if (oids.length === 0) return types;
  const out = await repo.text(["cat-file", "--batch-check=%(objectname) %(objecttype)"], { input: oids.join("\n") + "\n" });
  for (const line of out.split("\n")) {
    const [oid, type] = line.split(" ");
    if (oid && type && type !== "missing") types.set(oid, type);
  }
  return types;
}

async function baseTips(repo: SafeRepository, base: BaseSource, signal?: AbortSignal): Promise<string[]> {
  if (base.kind === "remote-tracking") {
    const out = await repo.text(["for-each-ref", "--format=%(objectname)", "refs/remotes/"]);
    return out.split("\n").filter(Boolean);
  }
  if (base.kind === "shared") {
    const shared = await openSafeRepository(base.repository, { signal });
    const out = await shared.text(["for-each-ref", "--format=%(objectname)"]);
    return out.split("\n").filter(Boolean);
  }
  let url = base.url;
  if (url === undefined) {
    const configured = await repo.git(["config", "--get", "remote.origin.url"], { okCodes: [0, 1] });
    url = configured.stdout.toString().trim();
    if (configured.code !== 0 || url === "") throw new CaptureRefusedError("no_remote_base", [], "no origin URL");
    // A local path is relative to the work tree.
    if (!/^[a-z][a-z0-9+.-]*:/i.test(url) && !url.startsWith("/")) url = path.resolve(repo.worktree!, url);
  }
  const listed = await runSafeGit(["ls-remote", "--", url], { cwd: emptyDir(), env: remoteEnv(), signal });
  return listed.stdout
    .toString()
    .split("\n")
    .map((line) => line.split("\t")[0]!)
    .filter(Boolean);
}

async function buildBundle(
  repo: SafeRepository,
  state: WorktreeState,
  options: CaptureOptions & { scope: CaptureScope; nested: boolean; limits: RestoreLimits },
  tmp: string,
): Promise<{ base: RestoreManifest["base"]; bundle: BuiltBundle | null }> {
  const candidates = new Set<string>([state.head.oid]);
  if (state.origHead) candidates.add(state.origHead);
  for (const oid of reflogOids(state.headReflog)) candidates.add(oid);
  for (const ref of state.refs) candidates.add(ref.oid);
  for (const log of state.refReflogs) for (const oid of reflogOids(log.log)) candidates.add(oid);
  if (options.nested) {
    for (const ref of state.remoteTracking) candidates.add(ref.oid);
    for (const log of state.remoteTrackingReflogs) for (const oid of reflogOids(log.log)) candidates.add(oid);
  }
  const blobs = [...new Set(state.index.entries.filter((e) => !e.intentToAdd).map((e) => e.oid))].sort();
  const tips = await objectTypes(repo, [...candidates].sort());
  const blobTypes = await objectTypes(repo, blobs);
  const baseOids = [...new Set(await baseTips(repo, options.base, options.signal))].sort();
  const presentBase = [...(await objectTypes(repo, baseOids)).keys()].sort();

  // The throwaway repository: reads the workspace's objects, writes only its own.
  const helper = path.join(tmp, "helper.git");
  const env = remoteEnv(options.inherited);
  await runSafeGit(["init", "-q", "--bare", "--template=", helper], { cwd: emptyDir(), env });
  await writeFile(path.join(helper, "objects", "info", "alternates"), `${repo.objectsDir}\n`);
  const helperEnv = { ...env, GIT_DIR: helper, GIT_AUTHOR_DATE: "@0 +0000", GIT_COMMITTER_DATE: "@0 +0000" };
  const helperGit = (args: string[], input?: string): Promise<string> =>
    runSafeGit(args, { cwd: helper, env: helperEnv, input, signal: options.signal }).then((r) => r.stdout.toString());

  let indexCarrier: string | null = null;
  const carried = blobs.filter((oid) => blobTypes.get(oid) === "blob");
  if (carried.length > 0) {
    const tree = (await helperGit(["mktree"], carried.map((oid) => `100644 blob ${oid}\t${oid}\n`).join(""))).trim();
    indexCarrier = (await helperGit(["commit-tree", tree, "-m", "reclaim index blobs"])).trim();
  }

  const refLines: string[] = [];
  const named = new Set<string>();
  for (const ref of state.refs) {
    if (tips.has(ref.oid)) {
      refLines.push(`create ${ref.name} ${ref.oid}`);
      named.add(ref.oid);
    }
  }
  refLines.push(`create refs/reclaim/head ${state.head.oid}`);
  for (const oid of [...tips.keys()].sort()) {
    if (!named.has(oid) && oid !== state.head.oid) refLines.push(`create refs/reclaim/history/${oid} ${oid}`);
  }
  if (indexCarrier) refLines.push(`create refs/reclaim/index ${indexCarrier}`);
  await helperGit(["update-ref", "--stdin"], refLines.join("\n") + "\n");
  const refNames = refLines.map((line) => line.split(" ")[1]!);
  const revInput = [...refNames, ...presentBase.map((oid) => `^${oid}`)].join("\n") + "\n";

  const commits = Number((await helperGit(["rev-list", "--count", "--stdin"], revInput)).trim());
  if (commits > options.limits.maxCommits) {
    throw new CaptureRefusedError("restore_point_too_many_commits", [], `${commits} commits`);
  }
  const base = { source: options.base.kind, oids: presentBase };
  if (commits === 0 && indexCarrier === null) return { base, bundle: null };
  const file = path.join(tmp, "restore.bundle");
  await helperGit(["bundle", "create", "-q", file, "--stdin"], revInput);
  const bytes = (await stat(file)).size;
  if (bytes > options.limits.maxBundleBytes) {
    throw new CaptureRefusedError("restore_point_bundle_too_large", [], `${bytes} bytes`);
  }
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return { base, bundle: { file, bytes, sha256: hash.digest("hex"), commits, indexCarrier } };
}
