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
 *
 * Nothing is followed, read through or written through a link below the top folder
 * `<instance>/isolated-workspaces`: the company folder is reached (made, when missing) one
 * proven level at a time (fs/proven-path.ts), the staging directory is made in it and
 * restored into only while it is the directory made (device + inode), and renamed into place
 * within the proven company folder, confirmed before and after. A level that is a link, or
 * is swapped for one meanwhile, fails the reopen (`unsafe_task_directory`) and the workspace
 * stays closed.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { digestTree, errnoCode, loadInstanceKey, open, restoreSnapshot, StorageKey } from "@reclaim/shared";
import type { Tx } from "../../db";
import { ensureDirBelow, PathRefused, removeRetired, type ProvenDir } from "../../fs";
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
import { isolatedRoot, SELECTION, sideName } from "./survey";

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
      const fresh = await startFresh(ctx, state);
      if (fresh !== null) {
        logRestore(ctx, row, { outcome: "failed", path: state.path, reason: fresh });
        return { outcome: "failed", path: state.path, reason: fresh, restorePointId: state.restorePointId };
      }
      result = { outcome: "fresh", path: state.path, warning: EXPIRED_WARNING };
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

/**
 * The company folder of the task directory, its missing levels made one at a time below the
 * top folder (never through a link); `unsafe` when a level is not a real directory.
 */
async function companyFolder(ctx: Ctx, state: RetentionState): Promise<ProvenDir | "unsafe"> {
  // The top folder, as configured (an operator's link there is followed, like every domain's).
  await mkdir(isolatedRoot(ctx.instanceRoot)).catch((error: unknown) => {
    if (errnoCode(error) !== "EEXIST") throw error;
  });
  const company = await ensureDirBelow(isolatedRoot(ctx.instanceRoot), path.dirname(state.path));
  return typeof company === "string" ? "unsafe" : company;
}

/** The restore point is gone: an empty directory (an existing real one is left as it is). Null when done. */
async function startFresh(ctx: Ctx, state: RetentionState): Promise<string | null> {
  try {
    const company = await companyFolder(ctx, state);
    if (company === "unsafe") return "unsafe_task_directory";
    await company.ensureDir(path.basename(state.path));
    return null;
  } catch (error) {
    if (error instanceof PathRefused) return "unsafe_task_directory";
    throw error;
  }
}

/** Null when the directory is in place with the saved tree; else why not (nothing was replaced). */
async function restoreInto(
  ctx: Ctx,
  state: RetentionState,
  storageKey: string,
  sha256: string,
): Promise<string | null> {
  const company = await companyFolder(ctx, state);
  if (company === "unsafe") return "unsafe_task_directory";
  const name = path.basename(state.path);
  const here = await company.lstatEntry(name);
  if (here !== null && (here.isSymbolicLink() || !here.isDirectory())) return "unsafe_task_directory";
  if (here !== null) {
    const present = company.childFrom(name, here);
    if ((await present.list()).length > 0) {
      // Already there (a restore whose commit was lost): the same tree is success, anything
      // else is kept and fails the reopen instead of being overwritten.
      const digest = await digestTree(present.path, {
        selection: SELECTION,
        limits: SNAPSHOT_LIMITS,
        rootIdentity: present.identity,
      }).catch(() => null);
      return digest?.treeDigest === state.treeDigest ? null : "task_directory_in_the_way";
    }
  }
  const storage = storageFor(ctx.config.storage);
  const key = await loadInstanceKey(ctx.config.instanceKey);
  const stagingName = sideName(".restoring");
  const staging = await company.ensureDir(stagingName);
  try {
    const options = {
      selection: SELECTION,
      limits: SNAPSHOT_LIMITS,
      rootIdentity: staging.identity,
    };
    const stream = await open(storage, StorageKey.parse(storageKey), key, { expectedSha256: sha256 });
    await restoreSnapshot(stream, staging.path, {
      limits: SNAPSHOT_LIMITS,
      expectedTreeDigest: state.treeDigest,
      rootIdentity: staging.identity,
    });
    const restored = await digestTree(staging.path, options);
    if (restored.treeDigest !== state.treeDigest) {
      await removeRetired(company, stagingName);
      return "task_directory_not_restorable";
    }
    await ctx.faults.hit("task-directories.staged");
    // An empty directory in the way is replaced by the rename itself (a non-empty one, or
    // anything else there now, fails it: nothing is overwritten).
    await company.rename(stagingName, name);
    return null;
  } catch (error) {
    await removeRetired(company, stagingName).catch(() => undefined);
    if (error instanceof PathRefused) return "unsafe_task_directory";
    const code = errnoCode(error);
    if (code === "ENOTEMPTY" || code === "EEXIST" || code === "ENOTDIR") return "task_directory_in_the_way";
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
