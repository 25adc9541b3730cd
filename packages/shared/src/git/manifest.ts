/**
 * The restore-point manifest: what callers store beside the sealed payload and verify
 * against. Deterministic: the same worktree gives the same bytes (no times, no inode data,
 * every list sorted, keys in one fixed order). Schema `reclaim.git-restore-point.v2` (v2: it
 * carries an ignored-files snapshot); a reader refuses any other schema.
 */
import { createHash } from "node:crypto";
import { GitRestoreError } from "./errors";
import { indexLines } from "./index-file";
import type { CaptureScope, RefValue, WorktreeState } from "./worktree-state";

export const MANIFEST_SCHEMA = "reclaim.git-restore-point.v2";

export interface TreeSection {
  files: number;
  bytes: number;
  /** tree-snapshot's tree digest: paths, kinds, modes, bytes, link targets. */
  treeDigest: string;
}

export interface RestoreManifest {
  schema: typeof MANIFEST_SCHEMA;
  objectFormat: string;
  scope: CaptureScope;
  nested: boolean;
  head: { oid: string; ref: string | null };
  /**
   * Where the base came from, and the bundle's prerequisites: the commits a target must hold
   * before the bundle can be imported (proven on the remote, or held by the shared clone),
   * sorted; empty without a bundle.
   */
  base: { source: "remote" | "remote-tracking" | "shared"; oids: string[] };
  bundle: null | {
    sha256: string;
    bytes: number;
    /** Commits in the bundle. */
    commits: number;
    /** The commit whose tree holds the index's blobs that no commit has. */
    indexCarrier: string | null;
    /**
     * The history-only objects the bundle saves, as the commits that reach them (sorted): what
     * a nested clone's remote-tracking refs and their reflogs alone hold, and what the capture's
     * `restoredFrom` imported and saved again. Apply imports them as objects only (no ref, no
     * reflog entry), so a later capture of the restored checkout, given this manifest as
     * `restoredFrom`, accepts them as unreachable objects and saves them again.
     */
    historyOnly: string[];
  };
  refs: RefValue[];
  index: { version: number; entries: number; digest: string };
  tracked: TreeSection & { statusDigest: string; deleted: number; deletedDigest: string };
  untracked: TreeSection;
  ignored: TreeSection;
  history: HistoryDigests;
  /** refs/remotes/* and their reflogs; null for a worktree of a shared clone (not its own). */
  remoteTracking: { digest: string } | null;
  sections: { indexSha256: string; historySha256: string };
}

export function sha256(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

export function linesDigest(lines: readonly string[]): string {
  const hash = createHash("sha256");
  for (const line of lines) hash.update(line).update("\0");
  return hash.digest("hex");
}

export interface HistoryDigests {
  headReflogSha256: string;
  origHead: string | null;
  /** The SHA-256 of each scope branch's reflog, by branch (sorted). */
  refReflogs: { name: string; sha256: string }[];
}

/** The parts of a manifest that a reading of the worktree determines without its file bytes. */
export interface StateDigests {
  head: { oid: string; ref: string | null };
  refs: RefValue[];
  index: { version: number; entries: number; digest: string };
  tracked: { statusDigest: string; deleted: number; deletedDigest: string };
  history: HistoryDigests;
  remoteTracking: { digest: string } | null;
}

export function stateDigests(state: WorktreeState): StateDigests {
  const reflogs = (logs: { name: string; log: Buffer }[]): string =>
    linesDigest(logs.flatMap((l) => [l.name, sha256(l.log)]));
  return {
    head: state.head,
    refs: state.refs,
    index: {
      version: state.index.version,
      entries: state.index.entries.length,
      digest: linesDigest(indexLines(state.index.entries)),
    },
    tracked: {
      statusDigest: linesDigest(state.trackedStatus),
      deleted: state.deleted.length,
      deletedDigest: linesDigest(state.deleted),
    },
    history: {
      headReflogSha256: sha256(state.headReflog),
      origHead: state.origHead,
      refReflogs: state.refReflogs.map((l) => ({ name: l.name, sha256: sha256(l.log) })),
    },
    remoteTracking: state.remoteTracking
      ? {
          digest: linesDigest([
            ...state.remoteTracking.map((r) => `${r.oid} ${r.name}`),
            reflogs(state.remoteTrackingReflogs),
          ]),
        }
      : null,
  };
}

export function serializeManifest(manifest: RestoreManifest): string {
  return JSON.stringify(manifest);
}

/** Parses a stored manifest; refuses a schema this build does not know. */
export function parseManifest(json: string): RestoreManifest {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new GitRestoreError("RECLAIM_ERR_GIT_PAYLOAD_INVALID", "manifest is not JSON", { cause: error });
  }
  const schema = (value as { schema?: unknown } | null)?.schema;
  if (schema !== MANIFEST_SCHEMA) {
    throw new GitRestoreError("RECLAIM_ERR_GIT_PAYLOAD_SCHEMA", `manifest schema ${JSON.stringify(schema)}`);
  }
  return value as RestoreManifest;
}
