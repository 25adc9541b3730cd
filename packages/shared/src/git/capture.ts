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
 * What the bundle holds and how the base is established: bundle.ts (no object is ever written
 * into the workspace's repository, so a capture killed, timed out or out of disk at any point
 * leaves it exactly as it was). Scope (what belongs to a worktree of a shared clone) and the
 * refusals: worktree-state.ts; the extra rules of nested standalone clones: nested-rules.ts.
 *
 * Example:
 *
 *   const capture = await captureWorktree(dir, { base: { kind: "remote" } });
 *   try {
 *     const sealed = await seal(capture.stream, { instanceKey, storage, storageKey, plaintextSize: capture.payloadSize });
 *     const manifest = await capture.manifest;   // store serializeManifest(manifest) with `sealed`
 *   } finally { await capture.dispose(); }
 */
import { createReadStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import {
  encodeSnapshot,
  isTreeSnapshotError,
  planTree,
  type SnapshotSummary,
  type TreePlan,
} from "../tree-snapshot";
import { CaptureRefusedError, GitRestoreError, type RefusalReason } from "./errors";
import { MANIFEST_SCHEMA, sha256, stateDigests, type RestoreManifest, type TreeSection } from "./manifest";
import { payloadSize, payloadStream, type Section, type SectionName } from "./payload";
import { buildBundle, restoredHistory, type BaseSource } from "./bundle";
import { openSafeRepository, type SafeRepository } from "./safe-git";
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

export type { BaseSource } from "./bundle";

export interface CaptureOptions {
  base: BaseSource;
  scope?: CaptureScope;
  /** Rules for nested `.paperclip-repositories` checkouts. Default false. */
  nested?: boolean;
  /**
   * The manifest of the restore point this checkout was last restored from (applyPayload), as
   * the caller stored it. Its history-only objects (and index carrier), which apply imported as
   * objects reachable from nothing, are saved again in this restore point, and a nested
   * checkout's `unreachable_objects` rule accepts exactly the objects they reach. Any other
   * unreachable object still refuses the capture. It must come from the caller's own records,
   * never from the workspace (an agent could name any object there).
   */
  restoredFrom?: RestoreManifest;
  limits?: RestoreLimits;
  /** Where the bundle is written. Default os.tmpdir(). */
  tmpDir?: string;
  signal?: AbortSignal;
  /** The environment git variables are stripped from. Default process.env. */
  inherited?: NodeJS.ProcessEnv;
}

export interface Capture {
  payloadSize: number;
  /** What the capture holds, known before the payload is read (a caller may judge, then seal or dispose). */
  preview: CapturePreview;
  stream: Readable;
  /** Resolves after `stream` ended; rejects if it failed. */
  manifest: Promise<RestoreManifest>;
  dispose(): Promise<void>;
}

/**
 * A capture's contents before its payload is read: enough to tell whether the remote
 * reproduces the worktree exactly (no commit beyond the base other than the index carrier, no
 * file saved) without reading a file.
 */
export interface CapturePreview {
  head: { oid: string; ref: string | null };
  /** The scope's branches (and tags, for a clone). */
  refs: { name: string; oid: string }[];
  /** Commits the bundle takes as present. */
  baseOids: string[];
  /** Commits in the bundle beyond the base, the index carrier not counted. */
  commits: number;
  /** Tracked paths saved as files, tracked paths deleted, untracked and ignored entries saved. */
  tracked: number;
  deleted: number;
  untracked: number;
  ignored: number;
}

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
    const restored = restoredHistory(options.restoredFrom);
    const { base, bundle } = await buildBundle(
      repo,
      state,
      { ...options, scope, nested, limits, restored },
      tmp,
    );
    const digests = stateDigests(state);
    const indexJson = Buffer.from(
      JSON.stringify({
        version: state.index.version,
        entries: state.index.entries,
        deleted: state.deleted,
        tracked: state.trackedPresent,
        untrackedFromHead: state.untrackedFromHead,
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
      stream.once("close", () =>
        stream.readableEnded ? resolve() : reject(new Error("payload stream closed early")),
      );
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
          ? {
              sha256: bundle.sha256,
              bytes: bundle.bytes,
              commits: bundle.commits,
              indexCarrier: bundle.indexCarrier,
              historyOnly: bundle.historyOnly,
            }
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
    const preview: CapturePreview = {
      head: state.head,
      refs: state.refs,
      baseOids: base.oids,
      commits: bundle ? bundle.commits - (bundle.indexCarrier ? 1 : 0) : 0,
      tracked: plans.tracked.entries.length,
      deleted: state.deleted.length,
      untracked: plans.untracked.entries.length,
      ignored: plans.ignored.entries.length,
    };
    return { payloadSize: payloadSize(sections), preview, stream, manifest, dispose };
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
  const snapshotLimits = {
    maxFiles: limits.maxFiles,
    maxFileBytes: limits.maxFileBytes,
    maxTotalBytes: limits.maxTotalBytes,
  };
  const plan = async (paths: string[]): Promise<TreePlan> => {
    try {
      return await planTree(worktree, { selection: { kind: "paths", paths }, limits: snapshotLimits });
    } catch (error) {
      if (isTreeSnapshotError(error)) {
        const reason = SNAPSHOT_REASONS[error.reason];
        if (reason)
          throw new CaptureRefusedError(
            reason,
            error.entryPath === null ? [] : [error.entryPath],
            error.message,
          );
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
  if (files > limits.maxFiles)
    throw new CaptureRefusedError("restore_point_too_many_files", [], `${files} entries`);
  const bytes = plans.tracked.fileBytes + plans.untracked.fileBytes + plans.ignored.fileBytes;
  if (bytes > limits.maxTotalBytes)
    throw new CaptureRefusedError("restore_point_too_large", [], `${bytes} bytes`);
  return plans;
}

/** Paths with a `filter` attribute cannot be restored byte for byte without running it. */
async function refuseFilteredPaths(repo: SafeRepository, state: WorktreeState): Promise<void> {
  const paths = [...new Set([...state.index.entries.map((e) => e.path), ...state.untracked])];
  // Attributes come only from .gitattributes files and info/attributes (global and system
  // ones are off): without either, no path has a filter, and git need not be asked.
  const isAttributes = (p: string): boolean => p === ".gitattributes" || p.endsWith("/.gitattributes");
  const attributeFiles =
    paths.some(isAttributes) ||
    state.ignored.some(isAttributes) ||
    (await stat(path.join(repo.commonDir, "info", "attributes")).then(
      () => true,
      () => false,
    ));
  if (paths.length === 0 || !attributeFiles) return;
  const out = await repo.git(["check-attr", "-z", "--stdin", "filter"], { input: paths.join("\0") + "\0" });
  const fields = out.stdout.toString("utf8").split("\0");
  const filtered: string[] = [];
  for (let i = 0; i + 2 < fields.length; i += 3) {
    if (fields[i + 2] !== "unspecified" && fields[i + 2] !== "unset") filtered.push(fields[i]!);
  }
  if (filtered.length > 0) throw new CaptureRefusedError("filtered_path", filtered);
}
