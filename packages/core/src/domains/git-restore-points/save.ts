/**
 * Saving a capture as a restore point, under the expiration locks: register it (`pending`,
 * with its storage key), seal the payload into storage (a fresh data key wrapped by the
 * instance key), read the stored object back in full and check its hash, size and key header.
 * What comes back is what the archive transaction activates; nothing is active before that.
 *
 * A failure on the way drops the pending row at once (this process was its only writer) and
 * rethrows; a kill leaves a `pending` row, which retention deletes after its capture grace.
 */
import {
  seal,
  StorageKey,
  type Capture,
  type InstanceKey,
  type RestoreManifest,
  type StorageProvider,
} from "@reclaim/shared";
import type { Db } from "../../db";
import type { FaultPoints } from "../../faults";
import type { DeadlineRequest } from "../../ledger";
import { dueFor, registerRestorePoint, verifyStored, type ActivateInput } from "../../restore-points";

export interface SaveDeps {
  db: Db;
  storage: StorageProvider;
  instanceKey: InstanceKey;
  now: () => Date;
  faults: FaultPoints;
  /** Records deadlines the ledger operations make due (restore-point retention's). */
  deadlines: (requests: DeadlineRequest[]) => void;
}

export interface SaveTarget {
  companyId: string;
  workspaceId: string;
  sourceIssueId: string;
  generation: number;
  kind: "worktree" | "nested_checkout";
  checkoutName: string | null;
}

export interface SavedPoint extends SaveTarget {
  restorePointId: string;
  storageKey: string;
  /** What activation records (checked against the stored object already). */
  facts: ActivateInput;
  manifest: RestoreManifest;
}

export async function saveCapture(deps: SaveDeps, target: SaveTarget, capture: Capture): Promise<SavedPoint> {
  const registered = await registerRestorePoint(
    deps.db,
    deps.storage,
    {
      companyId: target.companyId,
      executionWorkspaceId: target.workspaceId,
      sourceIssueId: target.sourceIssueId,
      generation: target.generation,
      kind: target.kind,
      checkoutName: target.checkoutName,
      metadata: { capturedBy: "git-restore-points" },
    },
    deps.now(),
  );
  deps.deadlines(registered.deadlines);
  const { id, storageKey } = registered.restorePoint;
  try {
    await deps.faults.hit("git-restore-points.registered");
    const sealed = await seal(capture.stream, {
      instanceKey: deps.instanceKey,
      storage: deps.storage,
      storageKey: StorageKey.parse(storageKey),
      plaintextSize: capture.payloadSize,
    });
    const manifest = await capture.manifest;
    await deps.faults.hit("git-restore-points.uploaded");
    const facts: ActivateInput = {
      companyId: target.companyId,
      id,
      sha256: sealed.sha256,
      byteSize: sealed.byteSize,
      formatVersion: sealed.formatVersion,
      keyFingerprint: sealed.keyFingerprint,
    };
    // Read back in full: nothing the upload reported is trusted.
    await verifyStored(deps.storage, { id, storageProvider: deps.storage.kind, storageKey }, facts);
    await deps.faults.hit("git-restore-points.read-back");
    return { ...target, restorePointId: id, storageKey, facts, manifest };
  } catch (error) {
    await dropPending(deps, target.companyId, id);
    throw error;
  }
}

/**
 * Drops a restore point this expiration registered and did not activate: `pending` ->
 * `delete_requested` at once (this process was its only writer, so no capture grace is
 * needed). A row that is anything but `pending` is left alone (best effort).
 */
export async function dropPending(
  deps: Pick<SaveDeps, "db" | "now" | "deadlines">,
  companyId: string,
  id: string,
): Promise<void> {
  const now = deps.now();
  const changed = await deps.db.executionWorkspaceRestorePoint
    .updateMany({
      where: { id, companyId, status: "pending" },
      data: { status: "delete_requested", deleteAfter: null, retryAt: null, lastError: null, updatedAt: now },
    })
    .catch(() => ({ count: 0 }));
  if (changed.count > 0) deps.deadlines([dueFor(companyId, "delete_requested", now)]);
}
