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
 *
 * Every step reaches the directory as a proven directory (survey.ts): its company folder from
 * the top folder down, no level a link; the re-read reads only the directory proven (its device
 * and inode), the rename is `retire` to the recorded name (refused when the directory is no
 * longer the one re-read), the delete `removeRetired` in the proven company folder. A level
 * swapped for a link at any moment is refused (`unsafe_task_directory`): nothing through it is
 * read, renamed or deleted.
 */
import path from "node:path";
import { digestTree } from "@reclaim/shared";
import type { Db, Tx } from "../../db";
import { PathRefused, removeRetired, retire } from "../../fs";
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
import { companyFolderOf, refusalOf, SELECTION } from "./survey";

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
  instanceRoot: string;
  now: Date;
  /** Records deadlines (a dropped restore point's deletion). */
  deadlines: (requests: DeadlineRequest[]) => void;
  hit: (point: string) => Promise<void>;
}

/** Remove and delete (see the header); every step checks the row is still at the archive's generation. */
export async function finishRemoval(deps: RemovalDeps, item: PendingRemoval): Promise<RemovalOutcome> {
  let state = item.state;
  if (state.state === "archived") {
    // After the archive's commit, before the locks are taken again: where a test reopens the row.
    await deps.hit("task-directories.before-rename");
    const step = await deps.db.$transaction((tx) => renameUnderLocks(deps, tx, item));
    if (step.outcome !== "renamed")
      return step.outcome === "kept" ? step : { outcome: "failed", reason: step.reason };
    state = { ...state, state: "removing" };
    await deps.hit("task-directories.after-rename");
  }
  if (state.state !== "removing") return { outcome: "kept", reason: "already_removed", retry: false };
  let bytes = 0;
  try {
    await deps.hit("task-directories.before-delete");
    const company = await companyFolderOf(deps.instanceRoot, state.path);
    if (company === "unsafe") return { outcome: "failed", reason: "unsafe_task_directory" };
    // removeRetired: the company folder confirmed before the tree is walked and again before it
    // is deleted; the recorded name itself a link is refused.
    if (company !== "missing") bytes = await removeRetired(company, state.expiredName);
  } catch (error) {
    if (error instanceof PathRefused) return { outcome: "failed", reason: "unsafe_task_directory" };
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
  const company = await companyFolderOf(deps.instanceRoot, state.path);
  if (company === "unsafe") return { outcome: "failed", reason: "unsafe_task_directory" };
  const name = path.basename(state.path);
  const here = company === "missing" ? null : await company.lstatEntry(name);
  if (here === null) {
    const aside = company === "missing" ? null : await company.lstatEntry(state.expiredName);
    // Renamed before a crash, the transaction that recorded it lost: finish from here.
    if (aside?.isDirectory()) {
      await recordRemoving(tx, item, deps.now);
      return { outcome: "renamed" };
    }
    return { outcome: "kept", reason: "task_directory_missing", retry: false };
  }
  if (company === "missing" || here.isSymbolicLink() || !here.isDirectory())
    return { outcome: "failed", reason: "unsafe_task_directory" };
  const dir = company.childFrom(name, here);
  // Between the capture and this re-read: where a test writes into the directory.
  await deps.hit("task-directories.before-recheck");
  let changed: string | null = null;
  try {
    // Only the directory proven above is read: another one at the path is `unsafe_root`.
    const now = await digestTree(dir.path, {
      selection: SELECTION,
      limits: SNAPSHOT_LIMITS,
      rootIdentity: dir.identity,
    });
    if (now.treeDigest !== state.treeDigest || now.stateDigest !== state.stateDigest)
      changed = "task_directory_changed";
  } catch (error) {
    const refused = refusalOf(error);
    if (refused === null) throw error;
    changed = refused === "unsafe_task_directory" ? refused : "task_directory_changed";
  }
  if (changed) {
    // The files changed after the capture (or the path no longer leads to the directory that
    // was saved): the workspace is active again, its restore point dropped, the directory kept.
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
    // Only the directory re-read (device + inode), in the proven company folder, to the recorded name.
    await retire(company, name, ".expired", dir.identity, state.expiredName);
  } catch (error) {
    if (!(error instanceof PathRefused)) return { outcome: "failed", reason: "rename_failed" };
    if (error.reason === "missing") return { outcome: "failed", reason: "task_directory_missing" };
    return { outcome: "failed", reason: "unsafe_task_directory" };
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
