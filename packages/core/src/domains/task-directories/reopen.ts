/**
 * Reopening a task directory workspace (the reopen route's reopener for rows this domain
 * archived; workspaces/reopen/types.ts). Runs holding the issue's source lock and the
 * workspace lifecycle lock, in the transaction that makes the row active again:
 *
 *  - the files are written into a `.restoring-<random>` staging directory beside the task
 *    directory (its name no longer than the original), never replacing anything, verified
 *    against the saved tree digest, and renamed into place. An empty directory in the way is
 *    replaced; a non-empty one is kept and fails the reopen (`task_directory_in_the_way`)
 *    unless it already is exactly the saved tree; the workspace then stays closed.
 *  - success makes the row active (Paperclip's reopen-pending flag set, so no reaper archives
 *    it before the run or comment uses it), supersedes the restore point (its object is
 *    deleted by restore-point retention; the next retention saves a new one) and records
 *    activity `execution_workspace.task_directory_restored`.
 *  - an expired (or otherwise gone) restore point starts an empty directory and answers
 *    `fresh` with the text of the system comment the server posts on the issue.
 * Each reopen logs `event: "execution_workspace.task_directory_restore"`.
 */
import { mkdir, readdir, rename, rm, rmdir } from "node:fs/promises";
import path from "node:path";
import { digestTree, loadInstanceKey, open, restoreSnapshot, StorageKey } from "@reclaim/shared";
import type { Tx } from "../../db";
import { entryKind } from "../../fs";
import { dueFor } from "../../restore-points";
import { storageFor } from "../../storage";
import {
  reactivateWorkspace,
  recordWorkspaceActivity,
  type ReopenContext,
  type ReopenResult,
  type WorkspaceReopener,
  type WorkspaceRow,
} from "../../workspaces";
import { SNAPSHOT_LIMITS, type TaskDirectoriesConfig } from "./config";
import { retentionStateOf, STATE_KEY, type RetentionState } from "./removal";
import { SELECTION, sideName } from "./survey";

export const EXPIRED_WARNING =
  "The earlier files of this task's directory are no longer available: they were removed to free disk and their restore point has expired, so the task starts with an empty directory.";

type Ctx = ReopenContext<TaskDirectoriesConfig>;

export const taskDirectoryReopener: WorkspaceReopener<TaskDirectoriesConfig> = {
  kind: "task_directory",
  matches: (row) =>
    row.strategy_type === "project_primary" &&
    row.provider_type === "local_fs" &&
    retentionStateOf(row.metadata) !== null,
  async reopen(ctx, tx, row) {
    const state = retentionStateOf(row.metadata)!;
    const rp = await tx.executionWorkspaceRestorePoint.findFirst({
      where: { id: state.restorePointId, companyId: row.company_id },
    });
    let result: ReopenResult;
    if (!rp || rp.status !== "active" || rp.sha256 === null) {
      result = await startFresh(state);
    } else {
      const restored = await restoreInto(ctx, state, rp.storageKey, rp.sha256);
      if (restored !== null) {
        logRestore(ctx, row, { outcome: "failed", path: state.path, reason: restored });
        return { outcome: "failed", path: state.path, reason: restored, restorePointId: rp.id };
      }
      await ctx.faults.hit("task-directories.restored");
      const superseded = await tx.executionWorkspaceRestorePoint.updateMany({
        where: { id: rp.id, status: "active" },
        data: {
          status: "superseded",
          deleteAfter: null,
          retryAt: null,
          lastError: null,
          updatedAt: ctx.clock.now(),
        },
      });
      if (superseded.count > 0) ctx.deadlines.push(dueFor(row.company_id, "superseded", ctx.clock.now()));
      result = { outcome: "restored", path: state.path, restorePointId: rp.id };
    }
    await activate(ctx, tx, row, state, result);
    logRestore(ctx, row, result);
    return result;
  },
};

async function activate(ctx: Ctx, tx: Tx, row: WorkspaceRow, state: RetentionState, result: ReopenResult) {
  const now = ctx.clock.now();
  const active = await reactivateWorkspace(tx, {
    companyId: row.company_id,
    workspaceId: row.id,
    now,
    removeKeys: [STATE_KEY],
    reopenPending: true,
  });
  if (!active) throw new Error(`BUG: workspace ${row.id} was closed under its lifecycle lock and is not now`);
  await recordWorkspaceActivity(tx, {
    companyId: row.company_id,
    workspaceId: row.id,
    action: "execution_workspace.task_directory_restored",
    details: {
      sourceIssueId: row.source_issue_id,
      reason: ctx.request.reason,
      outcome: result.outcome,
      restorePointId: state.restorePointId,
      path: state.path,
    },
    at: now,
  });
}

/** The restore point is gone: an empty directory (an existing one is left as it is). */
async function startFresh(state: RetentionState): Promise<ReopenResult> {
  if ((await entryKind(state.path)) === "missing") await mkdir(state.path, { mode: 0o755 });
  return { outcome: "fresh", path: state.path, warning: EXPIRED_WARNING };
}

/** Null when the directory is in place with the saved tree; else why not (nothing was replaced). */
async function restoreInto(
  ctx: Ctx,
  state: RetentionState,
  storageKey: string,
  sha256: string,
): Promise<string | null> {
  const options = { selection: SELECTION, limits: SNAPSHOT_LIMITS };
  const here = await entryKind(state.path);
  if (here === "symlink" || here === "file" || here === "other") return "unsafe_task_directory";
  if (here === "directory" && (await readdir(state.path)).length > 0) {
    // Already there (a restore whose commit was lost): the same tree is success, anything else
    // is kept and fails the reopen instead of being overwritten.
    const present = await digestTree(state.path, options).catch(() => null);
    return present?.treeDigest === state.treeDigest ? null : "task_directory_in_the_way";
  }
  const storage = storageFor(ctx.config.storage);
  const key = await loadInstanceKey(ctx.config.instanceKey);
  const staging = path.join(path.dirname(state.path), sideName(".restoring"));
  await mkdir(staging, { mode: 0o700 });
  try {
    const stream = await open(storage, StorageKey.parse(storageKey), key, { expectedSha256: sha256 });
    await restoreSnapshot(stream, staging, { limits: SNAPSHOT_LIMITS, expectedTreeDigest: state.treeDigest });
    const restored = await digestTree(staging, options);
    if (restored.treeDigest !== state.treeDigest) {
      await rm(staging, { recursive: true, force: true });
      return "task_directory_not_restorable";
    }
    await ctx.faults.hit("task-directories.staged");
    if (here === "directory") await rmdir(state.path); // empty: replaced
    await rename(staging, state.path);
    return null;
  } catch (error) {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    ctx.log.warn("task directory restore failed", { error });
    return "task_directory_not_restorable";
  }
}

function logRestore(ctx: Ctx, row: WorkspaceRow, result: ReopenResult): void {
  ctx.log.info("task directory restore", {
    event: "execution_workspace.task_directory_restore",
    companyId: row.company_id,
    executionWorkspaceId: row.id,
    issueId: row.source_issue_id,
    // What asked for the reopen (run, comment, agent_update); `reason` is why one failed.
    trigger: ctx.request.reason,
    reason: null,
    ...result,
  });
}
