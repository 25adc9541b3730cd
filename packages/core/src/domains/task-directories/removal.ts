/**
 * The removal protocol of a saved task directory. Its progress is recorded in the workspace
 * row's metadata (`isolatedTaskDirectoryRetention`), so every step after a crash is finished
 * or undone by a later sweep:
 *
 *   archive   (the job's apply transaction, holding the issue's source lock and the
 *             workspace lifecycle lock) activate the verified restore point, archive the row
 *             with state `archived` and the `.expired-<random>` name the directory will get,
 *             activity `execution_workspace.task_directory_archived`.
 *   remove    (after commit, a transaction holding both locks again) read the directory again:
 *             anything changed since the capture (tree digest, or any touch, chmod or rename:
 *             the state digest) makes the row active again, drops the restore point and keeps
 *             the directory (`task_directory_changed`). Otherwise rename it to the recorded
 *             name and record state `removing`.
 *   delete    (after that commit) delete the renamed tree, then record state `removed` and
 *             activity `execution_workspace.task_directory_removed`.
 * A crash after the rename but before its commit leaves state `archived` with the directory
 * under its recorded name: the next sweep sees that and deletes it (the restore point is
 * active and verified). The directory or an active, verified restore point always exists.
 */
import { rename, rm } from "node:fs/promises";
import path from "node:path";
import { digestTree } from "@reclaim/shared";
import { errnoCode } from "@reclaim/shared";
import type { Db, Tx } from "../../db";
import { entryKind, treeStats } from "../../fs";
import {
  lifecycleGeneration,
  lockWorkspaceLifecycle,
  mergeWorkspaceMetadata,
  metadataOf,
  reactivateWorkspace,
  recordWorkspaceActivity,
  tryLockIssueSource,
  tryLockWorkspaceLifecycle,
  workspaceRows,
  type WorkspaceRow,
} from "../../workspaces";
import type { DeadlineRequest } from "../../ledger";
import { SNAPSHOT_LIMITS } from "./config";
import { dropRestorePoint } from "./capture";
import { refusalOf, SELECTION } from "./survey";

export const STATE_KEY = "isolatedTaskDirectoryRetention";

export interface RetentionState {
  version: 1;
  state: "archived" | "removing" | "removed";
  restorePointId: string;
  path: string;
  expiredName: string;
  treeDigest: string;
  stateDigest: string;
  /** The lifecycle generation the archive wrote: a reopen raises it, fencing this removal off. */
  generation: number;
  archivedAt: string;
  removedAt?: string;
  bytes?: number;
}

export function retentionStateOf(metadata: unknown): RetentionState | null {
  const raw = metadataOf(metadata)[STATE_KEY];
  const s = metadataOf(raw) as Partial<RetentionState>;
  return s.version === 1 && typeof s.restorePointId === "string" && typeof s.path === "string"
    ? (s as RetentionState)
    : null;
}

/** A removal to do or finish after the archive committed. */
export interface PendingRemoval {
  companyId: string;
  workspaceId: string;
  sourceIssueId: string;
  state: RetentionState;
  /** Saved on a closed row its issue is still bound to (the walk's `preserved_and_removed`). */
  preserved?: boolean;
}

export type RemovalOutcome =
  | { outcome: "removed"; bytes: number }
  | { outcome: "kept"; reason: string; retry: boolean }
  | { outcome: "failed"; reason: string };

interface RemovalDeps {
  db: Db;
  now: Date;
  /** Records deadlines (a dropped restore point's deletion). */
  deadlines: (requests: DeadlineRequest[]) => void;
  hit: (point: string) => Promise<void>;
}

/** Remove and delete (see the header); every step checks the row is still at the archive's generation. */
export async function finishRemoval(deps: RemovalDeps, item: PendingRemoval): Promise<RemovalOutcome> {
  const expired = path.join(path.dirname(item.state.path), item.state.expiredName);
  let state = item.state;
  if (state.state === "archived") {
    const step = await deps.db.$transaction((tx) => renameUnderLocks(deps, tx, item));
    if (step.outcome !== "renamed")
      return step.outcome === "kept" ? step : { outcome: "failed", reason: step.reason };
    state = { ...state, state: "removing" };
    await deps.hit("task-directories.after-rename");
  }
  if (state.state !== "removing") return { outcome: "kept", reason: "already_removed", retry: false };
  let bytes = 0;
  try {
    const kind = await entryKind(expired);
    if (kind === "symlink") return { outcome: "failed", reason: "unsafe_task_directory" };
    if (kind === "directory") {
      bytes = (await treeStats(expired)).allocatedBytes;
      await deps.hit("task-directories.before-delete");
      await rm(expired, { recursive: true, force: false, maxRetries: 2 });
    }
  } catch {
    return { outcome: "failed", reason: "delete_failed" };
  }
  await deps.db.$transaction(async (tx) => {
    const removedAt = deps.now.toISOString();
    // A reopen since the rename (it restored from the restore point) owns the row now.
    await lockWorkspaceLifecycle(tx, item.workspaceId);
    const row = (await workspaceRows(tx, item.companyId, [item.workspaceId])).get(item.workspaceId);
    const current = row ? retentionStateOf(row.metadata) : null;
    if (current?.restorePointId !== state.restorePointId || current.state !== "removing") return;
    await mergeWorkspaceMetadata(tx, {
      companyId: item.companyId,
      workspaceId: item.workspaceId,
      now: deps.now,
      metadata: { [STATE_KEY]: { ...state, state: "removed", removedAt, bytes } },
    });
    await recordWorkspaceActivity(tx, {
      companyId: item.companyId,
      workspaceId: item.workspaceId,
      action: "execution_workspace.task_directory_removed",
      details: {
        sourceIssueId: item.sourceIssueId,
        restorePointId: state.restorePointId,
        path: state.path,
        bytes,
      },
      at: deps.now,
    });
  });
  return { outcome: "removed", bytes };
}

type RenameStep =
  | { outcome: "renamed" }
  | { outcome: "kept"; reason: string; retry: boolean }
  | { outcome: "failed"; reason: string };

async function renameUnderLocks(deps: RemovalDeps, tx: Tx, item: PendingRemoval): Promise<RenameStep> {
  const { state } = item;
  if ((await tryLockIssueSource(tx, item.companyId, item.sourceIssueId)) === "busy") {
    return { outcome: "kept", reason: "lock_busy", retry: true };
  }
  if (!(await tryLockWorkspaceLifecycle(tx, item.workspaceId)))
    return { outcome: "kept", reason: "lock_busy", retry: true };
  const row = (await workspaceRows(tx, item.companyId, [item.workspaceId])).get(item.workspaceId);
  if (!row || !stillArchived(row, state))
    return { outcome: "kept", reason: "workspace_reopened", retry: false };
  const expired = path.join(path.dirname(state.path), state.expiredName);
  const here = await entryKind(state.path);
  if (here === "missing" && (await entryKind(expired)) === "directory") {
    // Renamed before a crash, the transaction that recorded it lost: finish from here.
    await recordRemoving(tx, item, deps.now);
    return { outcome: "renamed" };
  }
  if (here === "missing") return { outcome: "kept", reason: "task_directory_missing", retry: false };
  if (here !== "directory") return { outcome: "failed", reason: "unsafe_task_directory" };
  // Between the capture and this re-read: where a test writes into the directory.
  await deps.hit("task-directories.before-recheck");
  let changed: string | null = null;
  try {
    const now = await digestTree(state.path, { selection: SELECTION, limits: SNAPSHOT_LIMITS });
    if (now.treeDigest !== state.treeDigest || now.stateDigest !== state.stateDigest)
      changed = "task_directory_changed";
  } catch (error) {
    if (refusalOf(error) === null) throw error;
    changed = "task_directory_changed";
  }
  if (changed) {
    // The files changed after the capture: the workspace is active again, its restore point
    // dropped, the directory kept.
    await reactivateWorkspace(tx, {
      companyId: item.companyId,
      workspaceId: item.workspaceId,
      now: deps.now,
      removeKeys: [STATE_KEY],
      reopenPending: false,
    });
    deps.deadlines(await dropRestorePoint(tx, item.companyId, state.restorePointId, deps.now));
    return { outcome: "kept", reason: changed, retry: false };
  }
  try {
    await rename(state.path, expired);
  } catch (error) {
    return {
      outcome: "failed",
      reason: errnoCode(error) === "ENOENT" ? "task_directory_missing" : "rename_failed",
    };
  }
  // Renamed, not yet recorded: a crash here leaves state `archived` and the recorded name.
  await deps.hit("task-directories.renamed");
  await recordRemoving(tx, item, deps.now);
  return { outcome: "renamed" };
}

function stillArchived(row: WorkspaceRow, state: RetentionState): boolean {
  const current = retentionStateOf(row.metadata);
  return (
    (row.status === "archived" || row.status === "cleanup_failed") &&
    lifecycleGeneration(row.metadata) === state.generation &&
    current?.restorePointId === state.restorePointId &&
    current.state === "archived"
  );
}

async function recordRemoving(tx: Tx, item: PendingRemoval, now: Date): Promise<void> {
  await mergeWorkspaceMetadata(tx, {
    companyId: item.companyId,
    workspaceId: item.workspaceId,
    now,
    metadata: { [STATE_KEY]: { ...item.state, state: "removing" } },
  });
}
