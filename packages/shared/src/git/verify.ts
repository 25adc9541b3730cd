/**
 * Verify: does the worktree still match its capture exactly? Callers run it under the
 * expiration locks; any difference is a typed result (never a throw), so expiration rolls
 * back and keeps the worktree. Compared: HEAD, the scope's branches, the index (entries,
 * modes, stages, flags), tracked changes and deletions, untracked and ignored files (bytes,
 * modes, links), the HEAD reflog and ORIG_HEAD (and the branches' reflogs), and the
 * remote-tracking refs with their reflogs.
 */
import { digestTree, isTreeSnapshotError } from "../tree-snapshot";
import { CaptureRefusedError, type RefusalReason } from "./errors";
import { stateDigests, type RestoreManifest, type StateDigests, type TreeSection } from "./manifest";
import { openSafeRepository, type SafeRepository } from "./safe-git";
import { readWorktreeState, type CaptureScope, type WorktreeState } from "./worktree-state";

export type DifferenceKind =
  "head" | "refs" | "index" | "tracked" | "untracked" | "ignored" | "history" | "remote_tracking" | "refused";

export interface Difference {
  kind: DifferenceKind;
  detail: string;
  /** For `refused`: the refusal the worktree now meets. */
  reason?: RefusalReason;
}

export type VerifyResult = { unchanged: true } | { unchanged: false; differences: Difference[] };

/** Limits for reading a live tree back: wide, the capture's limits were already enforced. */
const READ_LIMITS = {
  maxFiles: 10_000_000,
  maxFileBytes: Number.MAX_SAFE_INTEGER,
  maxTotalBytes: Number.MAX_SAFE_INTEGER,
};

export interface LiveReading {
  state: WorktreeState;
  digests: StateDigests;
  trees: Record<"tracked" | "untracked" | "ignored", TreeSection>;
}

/** Reads `repo` the way a capture does and digests it; a refusal or a race is a Difference. */
export async function readLive(
  repo: SafeRepository,
  rules: { scope: CaptureScope; nested: boolean },
): Promise<LiveReading | Difference> {
  let state: WorktreeState;
  try {
    state = await readWorktreeState(repo, rules);
  } catch (error) {
    if (error instanceof CaptureRefusedError)
      return { kind: "refused", reason: error.reason, detail: error.message };
    throw error;
  }
  const tree = async (paths: string[]): Promise<TreeSection> => {
    const result = await digestTree(repo.worktree!, {
      selection: { kind: "paths", paths },
      limits: READ_LIMITS,
    });
    return { files: result.files, bytes: result.fileBytes, treeDigest: result.treeDigest };
  };
  try {
    const trees = {
      tracked: await tree(state.trackedPresent),
      untracked: await tree(state.untracked),
      ignored: await tree(state.ignored),
    };
    return { state, digests: stateDigests(state), trees };
  } catch (error) {
    if (isTreeSnapshotError(error))
      return { kind: "tracked", detail: `changed while read: ${error.message}` };
    throw error;
  }
}

export function compareReading(
  manifest: RestoreManifest,
  live: LiveReading,
  skip: { remoteTracking?: boolean; ignored?: boolean } = {},
): Difference[] {
  const out: Difference[] = [];
  const { digests, trees } = live;
  const differ = (kind: DifferenceKind, what: string, expected: unknown, actual: unknown): void => {
    if (JSON.stringify(expected) !== JSON.stringify(actual)) {
      out.push({
        kind,
        detail: `${what}: expected ${JSON.stringify(expected)}, found ${JSON.stringify(actual)}`,
      });
    }
  };
  differ("head", "HEAD", manifest.head, digests.head);
  differ("refs", "branches", manifest.refs, digests.refs);
  differ("index", "index", manifest.index, digests.index);
  differ("tracked", "tracked status", manifest.tracked.statusDigest, digests.tracked.statusDigest);
  differ(
    "tracked",
    "deleted paths",
    [manifest.tracked.deleted, manifest.tracked.deletedDigest],
    [digests.tracked.deleted, digests.tracked.deletedDigest],
  );
  differ("tracked", "tracked files", treeOf(manifest.tracked), trees.tracked);
  differ("untracked", "untracked files", treeOf(manifest.untracked), trees.untracked);
  if (!skip.ignored) differ("ignored", "ignored files", treeOf(manifest.ignored), trees.ignored);
  differ("history", "HEAD reflog, ORIG_HEAD and branch reflogs", manifest.history, digests.history);
  if (!skip.remoteTracking)
    differ("remote_tracking", "remote-tracking refs", manifest.remoteTracking, digests.remoteTracking);
  return out;
}

function treeOf(section: TreeSection): TreeSection {
  return { files: section.files, bytes: section.bytes, treeDigest: section.treeDigest };
}

export async function verifyUnchanged(
  dir: string,
  manifest: RestoreManifest,
  options: { inherited?: NodeJS.ProcessEnv; signal?: AbortSignal } = {},
): Promise<VerifyResult> {
  const repo = await openSafeRepository(dir, options);
  const live = await readLive(repo, manifest);
  const differences = "kind" in live ? [live] : compareReading(manifest, live);
  return differences.length === 0 ? { unchanged: true } : { unchanged: false, differences };
}
