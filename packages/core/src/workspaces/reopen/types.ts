/**
 * Reopening a closed execution workspace: what the Paperclip server asks for before a run
 * uses the workspace, or when a comment or an agent update arrives on its issue, and what
 * each kind of workspace (a git worktree, a task directory) plugs in to do it.
 *
 * A domain that removes workspaces declares a `reopener` (domains/types.ts). The reopen
 * worker (run.ts) takes the same locks expiration takes (the source lock, then the
 * workspace lifecycle lock), re-reads the row under them, answers `already_applied` for a
 * row that is open again, and otherwise hands the row to the first reopener whose `matches`
 * accepts it, inside that transaction: the reopener restores, verifies, and in the same
 * transaction makes the row active (transitions.ts `reactivateWorkspace`, with the
 * reopen-pending flag) and supersedes its restore point. A failure keeps the row closed and
 * answers `failed`: the run must not start in a new workspace.
 */
import type { Clock } from "../../clock";
import type { Db, Tx } from "../../db";
import type { FaultPoints } from "../../faults";
import type { DeadlineRequest } from "../../ledger";
import type { Logger } from "../../logging";
import type { WorkspaceRow } from "../facts";

export const REOPEN_REASONS = ["run", "comment", "agent_update"] as const;
export type ReopenReason = (typeof REOPEN_REASONS)[number];

export const REOPEN_OUTCOMES = ["restored", "already_applied", "fresh", "failed"] as const;
export type ReopenOutcome = (typeof REOPEN_OUTCOMES)[number];

export interface ReopenResult {
  outcome: ReopenOutcome;
  /** The workspace's path (its cwd), where the run finds it. */
  path: string | null;
  /** The restore point the workspace was restored from. */
  restorePointId?: string;
  /** For `fresh`: the text of the system comment the server posts on the issue. */
  warning?: string;
  /** For `failed`: why (a stable code, e.g. `task_directory_in_the_way`). */
  reason?: string;
}

export interface ReopenRequest {
  companyId: string;
  workspaceId: string;
  reason: ReopenReason;
}

export interface ReopenContext<C = unknown> {
  readonly request: ReopenRequest;
  readonly jobId: string;
  /** The reopening domain's controls, as this process read them. */
  readonly config: C;
  readonly db: Db;
  readonly clock: Clock;
  readonly instanceRoot: string;
  readonly log: Logger;
  readonly faults: FaultPoints;
  /** Deadlines the reopen makes due (a superseded restore point's deletion); recorded after commit. */
  readonly deadlines: DeadlineRequest[];
}

export interface WorkspaceReopener<C = unknown> {
  /** A short name for logs (`task_directory`, `git_worktree`). */
  readonly kind: string;
  /** This reopener restores workspaces of this row's kind. */
  matches(row: WorkspaceRow, config: C): boolean;
  /**
   * Restores the closed `row` (read under both locks, which `tx` holds) and, on success,
   * reactivates it in `tx`. Throwing rolls `tx` back and answers `failed` (reason
   * `reopen_error`); a refusal it can name is returned as `{outcome: "failed", reason}`.
   */
  reopen(ctx: ReopenContext<C>, tx: Tx, row: WorkspaceRow): Promise<ReopenResult>;
}
