/**
 * The spec's log lines ("Controls and logs"), written in one place:
 *  - `execution_workspace.task_directory_retention`, once per open or pending workspace a batch
 *    judges: outcome `removed`, `dry_run` or `skipped`, the skip reason, candidate bytes and
 *    reclaimed bytes (allocated bytes of the directory);
 *  - `execution_workspace.task_directory_cleanup`, once per directory the walk inspects:
 *    outcome `removed`, `preserved_and_removed` (a closed row its issue is still bound to, saved
 *    and removed), `dry_run` or `skipped`, the reason, and the directory's bytes. A directory an
 *    open workspace points at is `skipped` with `workspace_open` (its row logs the retention
 *    line); a closed-but-bound row logs both lines.
 * The reopen's `execution_workspace.task_directory_restore` is written by reopen.ts.
 */
import type { WorkspaceRow } from "../../workspaces";
import type { JobContext } from "../types";
import type { TaskDirectoriesConfig } from "./config";
import { provenBytes, provenTask } from "./survey";

type Ctx = JobContext<TaskDirectoriesConfig>;

export function retentionLog(
  ctx: Ctx,
  row: Pick<WorkspaceRow, "id" | "company_id" | "source_issue_id">,
  outcome: "removed" | "dry_run" | "skipped",
  reason: string | null,
  candidateBytes: number,
  reclaimedBytes: number,
  detail?: string[],
): void {
  ctx.log.info("task directory retention", {
    event: "execution_workspace.task_directory_retention",
    companyId: row.company_id,
    executionWorkspaceId: row.id,
    issueId: row.source_issue_id,
    outcome,
    reason,
    ...(detail ? { consumers: detail } : {}),
    candidateBytes,
    reclaimedBytes,
  });
}

export function cleanupLog(
  ctx: Ctx,
  companyId: string,
  issueId: string,
  outcome: "removed" | "preserved_and_removed" | "dry_run" | "skipped",
  reason: string | null,
  bytes: number,
): void {
  ctx.log.info("task directory cleanup", {
    event: "execution_workspace.task_directory_cleanup",
    companyId,
    issueId,
    outcome,
    reason,
    bytes,
  });
}

/** Allocated bytes of a task directory (never through a link); 0 when it is not a real directory. */
export async function directoryBytes(
  instanceRoot: string,
  dir: string,
  signal?: AbortSignal,
): Promise<number> {
  return provenBytes(await provenTask(instanceRoot, dir), signal);
}

/**
 * The bytes of the directories one batch logs, each walked at most once: a directory judged
 * both as a workspace's (planned, or kept) and as the walk's (`workspace_open`) is one walk,
 * not two; the plan's own count is noted, so a directory it planned is not walked again.
 */
export class BatchBytes {
  private readonly known = new Map<string, number>();
  constructor(private readonly instanceRoot: string) {}

  note(dir: string, bytes: number): void {
    this.known.set(dir, bytes);
  }

  async of(dir: string, signal?: AbortSignal): Promise<number> {
    let bytes = this.known.get(dir);
    if (bytes === undefined) {
      bytes = await directoryBytes(this.instanceRoot, dir, signal);
      this.known.set(dir, bytes);
    }
    return bytes;
  }
}
