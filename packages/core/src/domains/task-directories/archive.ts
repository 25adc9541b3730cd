/**
 * The archive step (removal.ts's protocol), in the job's transaction: the issue's source lock
 * and the workspace lifecycle lock without waiting, the rules again under them, then the
 * restore point's activation and the row's archive (or, for a closed row its issue is still
 * bound to, the recorded state) with activity `execution_workspace.task_directory_archived`.
 */
import type { Tx } from "../../db";
import { recordActivation } from "../../restore-points";
import {
  archiveWorkspace,
  isClosedWorkspaceStatus,
  lifecycleGeneration,
  mergeWorkspaceMetadata,
  recordWorkspaceActivity,
  tryLockIssueSource,
  tryLockWorkspaceLifecycle,
  workspaceRows,
  type WorkspaceRow,
} from "../../workspaces";
import type { JobContext } from "../types";
import type { Captured } from "./capture";
import type { TaskDirectoriesConfig } from "./config";
import { judgeRows } from "./judge";
import { STATE_KEY, type RetentionState } from "./removal";
import { sideName } from "./survey";

type Ctx = JobContext<TaskDirectoriesConfig>;

export interface Candidate {
  row: WorkspaceRow;
  path: string;
  captured: Captured;
}

/**
 * The lifecycle generation the archive will write (and the restore point's generation): one
 * more for an open row; a closed row keeps its own (nothing archives it again).
 */
export function nextGeneration(row: WorkspaceRow): number {
  return lifecycleGeneration(row.metadata) + (isClosedWorkspaceStatus(row.status) ? 0 : 1);
}

/** The archived state, or why the workspace was kept. */
export async function archiveUnderLocks(
  ctx: Ctx,
  tx: Tx,
  c: Candidate,
): Promise<{ state: RetentionState } | { kept: string }> {
  const companyId = c.row.company_id;
  const lockedIssue = await tryLockIssueSource(tx, companyId, c.row.source_issue_id!);
  if (lockedIssue !== "locked") return { kept: lockedIssue === "busy" ? "lock_busy" : "issue_missing" };
  if (!(await tryLockWorkspaceLifecycle(tx, c.row.id))) return { kept: "lock_busy" };
  const row = (await workspaceRows(tx, companyId, [c.row.id])).get(c.row.id);
  if (!row || isClosedWorkspaceStatus(row.status) !== isClosedWorkspaceStatus(c.row.status)) {
    return { kept: "workspace_changed" };
  }
  if (nextGeneration(row) !== c.captured.generation) return { kept: "workspace_changed" };
  const verdict = (await judgeRows(ctx, tx, companyId, [row])).get(row.id)!;
  if (!verdict.save) return { kept: verdict.reason };
  const { sealed } = c.captured;
  const activated = await recordActivation(
    tx,
    {
      companyId,
      id: c.captured.restorePointId,
      sha256: sealed.sha256,
      byteSize: sealed.byteSize,
      formatVersion: sealed.formatVersion,
      keyFingerprint: sealed.keyFingerprint,
    },
    ctx.startedAt,
  );
  if (activated.count !== 1) return { kept: "restore_point_unverified" };
  const state: RetentionState = {
    version: 1,
    state: "archived",
    restorePointId: c.captured.restorePointId,
    path: c.path,
    expiredName: sideName(".expired"),
    treeDigest: c.captured.treeDigest,
    stateDigest: c.captured.stateDigest,
    generation: c.captured.generation,
    archivedAt: ctx.startedAt.toISOString(),
  };
  // A closed row its issue is still bound to is already archived: the state is recorded on it.
  const metadata = isClosedWorkspaceStatus(row.status)
    ? await mergeWorkspaceMetadata(tx, {
        companyId,
        workspaceId: row.id,
        now: ctx.startedAt,
        metadata: { [STATE_KEY]: state },
      })
    : await archiveWorkspace(tx, {
        companyId,
        workspaceId: row.id,
        now: ctx.startedAt,
        cleanupReason: "task_directory_retention",
        metadata: { [STATE_KEY]: state },
      });
  if (!metadata) return { kept: "workspace_changed" };
  await recordWorkspaceActivity(tx, {
    companyId,
    workspaceId: row.id,
    action: "execution_workspace.task_directory_archived",
    details: { sourceIssueId: row.source_issue_id, restorePointId: state.restorePointId, path: c.path },
    at: ctx.startedAt,
  });
  ctx.deadlines.at("activated", ctx.startedAt, companyId, "restore-point-retention");
  await ctx.faults.hit("task-directories.archived");
  return { state };
}
