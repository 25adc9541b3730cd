/**
 * Saving a task directory in a restore point, outside any lock (the spec's order):
 *
 *  1. register a `pending` restore point of kind `task_directory` (its storage key is under
 *     `git-restore-points/<workspace>/<generation>/task-directory/`);
 *  2. stream the planned tree's snapshot straight into `seal()` (constant memory), with a
 *     per-restore-point key wrapped by the instance secrets key;
 *  3. read the stored object back and hash it: its SHA-256, size, format version and key
 *     fingerprint must be what sealing returned;
 *  4. decode the stored snapshot once, completely (open, authenticate, parse, check every
 *     file's hash, the tree digest): a snapshot that cannot be restored keeps the directory
 *     (`task_directory_not_restorable`).
 * Activation happens later, in the transaction that archives the workspace. Any failure
 * drops the pending restore point (`delete_requested`), so no object is left behind.
 */
import {
  assertRestorePointsAllowed,
  encodeSnapshot,
  isTreeSnapshotError,
  loadInstanceKey,
  open,
  seal,
  SealError,
  StorageError,
  StorageKey,
  validateSnapshot,
  type InstanceKey,
  type SealedObject,
  type StorageProvider,
  type TreePlan,
} from "@reclaim/shared";
import type { Db, Tx } from "../../db";
import { dueFor, readBack, registerRestorePoint } from "../../restore-points";
import type { DeadlineRequest } from "../../ledger";
import { SNAPSHOT_LIMITS, type TaskDirectoriesConfig } from "./config";
import { refusalOf } from "./survey";

export interface Captured {
  restorePointId: string;
  storageKey: string;
  sealed: SealedObject;
  treeDigest: string;
  stateDigest: string;
  generation: number;
}

export type CaptureResult =
  { ok: true; captured: Captured } | { ok: false; reason: string; restorePointId?: string };

export interface CaptureInput {
  companyId: string;
  workspaceId: string;
  sourceIssueId: string;
  generation: number;
  plan: TreePlan;
  now: Date;
}

/** The instance key, refused for s3 storage with a key file (`restore_points_refused`). */
export async function restorePointKey(
  config: TaskDirectoriesConfig,
  storage: StorageProvider,
): Promise<InstanceKey | "refused"> {
  const key = await loadInstanceKey(config.instanceKey);
  try {
    assertRestorePointsAllowed(storage.kind, key.source);
  } catch (error) {
    if (error instanceof SealError) return "refused";
    throw error;
  }
  return key;
}

/** Fault points between the steps (packages/core/src/faults.ts): where a test damages the object. */
export interface CaptureFaults {
  hit(point: "task-directories.sealed" | "task-directories.read-back"): Promise<void>;
}

export async function captureDirectory(
  db: Db,
  storage: StorageProvider,
  instanceKey: InstanceKey,
  input: CaptureInput,
  faults: CaptureFaults,
  /** Records deadlines: the registration's capture grace (restore-point retention's). */
  deadlines: (requests: DeadlineRequest[]) => void,
  signal?: AbortSignal,
): Promise<CaptureResult> {
  const registered = await registerRestorePoint(
    db,
    storage,
    {
      companyId: input.companyId,
      executionWorkspaceId: input.workspaceId,
      sourceIssueId: input.sourceIssueId,
      generation: input.generation,
      kind: "task_directory",
    },
    input.now,
  );
  // The end of the capture grace, recorded with the job's report: a capture that breaks off
  // (the job failing after this) leaves a pending restore point and its object, which only
  // restore-point retention deletes, and nothing polls for it. (A killed job records nothing;
  // its retry registers again, and retention's batch then also takes the older pending rows.)
  deadlines(registered.deadlines);
  const { restorePoint } = registered;
  const storageKey = StorageKey.parse(restorePoint.storageKey);
  try {
    const { stream, summary } = encodeSnapshot(input.plan, { signal });
    const sealed = await seal(stream, {
      instanceKey,
      storage,
      storageKey,
      plaintextSize: input.plan.encodedSize,
    });
    const { treeDigest } = await summary;
    await faults.hit("task-directories.sealed");
    const stored = await readBack(storage, restorePoint.storageKey);
    const header = stored.header.state === "read" ? stored.header : null;
    if (
      !stored.found ||
      stored.sha256 !== sealed.sha256 ||
      stored.byteSize !== sealed.byteSize ||
      header?.formatVersion !== sealed.formatVersion ||
      header?.keyFingerprint !== sealed.keyFingerprint
    ) {
      return { ok: false, reason: "restore_point_unverified", restorePointId: restorePoint.id };
    }
    await faults.hit("task-directories.read-back");
    // Decoded once, completely, before anything is removed.
    await validateSnapshot(await open(storage, storageKey, instanceKey, { expectedSha256: sealed.sha256 }), {
      limits: SNAPSHOT_LIMITS,
      expectedTreeDigest: treeDigest,
      signal,
    });
    return {
      ok: true,
      captured: {
        restorePointId: restorePoint.id,
        storageKey: restorePoint.storageKey,
        sealed,
        treeDigest,
        stateDigest: input.plan.stateDigest,
        generation: input.generation,
      },
    };
  } catch (error) {
    const reason =
      refusalOf(error) ??
      (error instanceof SealError && !isTreeSnapshotError(error) ? "task_directory_not_restorable" : null) ??
      (error instanceof StorageError ? "storage_unavailable" : null);
    if (reason === null) throw error;
    return { ok: false, reason, restorePointId: restorePoint.id };
  }
}

/**
 * Drops a restore point this domain no longer needs (a capture that failed, a directory that
 * changed before its removal): `delete_requested`, deleted by restore-point retention.
 */
export async function dropRestorePoint(
  db: Db | Tx,
  companyId: string,
  id: string,
  now: Date,
): Promise<DeadlineRequest[]> {
  const changed = await db.executionWorkspaceRestorePoint.updateMany({
    where: { id, companyId, status: { in: ["pending", "active"] } },
    data: { status: "delete_requested", deleteAfter: null, retryAt: null, lastError: null, updatedAt: now },
  });
  return changed.count === 0 ? [] : [dueFor(companyId, "delete_requested", now)];
}
