/**
 * The spec's retention rules for one restore point, as pure functions of what was read.
 *
 * Review of an `active` row that is due (its `delete_after` has passed: the issues trigger
 * marked it, or its expiry time came), by its source issue tree (the source issue and all
 * its descendants):
 *   - tree still open (any issue not `done` or `cancelled`): clear `delete_after` and wait
 *     for the next issue change;
 *   - tree closed: expire `days` after the tree's latest close, at once if that has passed
 *     (a task directory counts from the later of the close and its removal, i.e. the
 *     activation, so a task closed long ago still keeps its files for the full period);
 *   - source issue gone: delete (no expiry hook).
 * Other work, by status: a `pending` row older than the capture grace was abandoned and is
 * deleted; an `expiring` row gets its expiry hook (again); `superseded` and
 * `delete_requested` rows have their object deleted.
 */
import type { RestorePointKind, RestorePointStatus } from "../../restore-points/vocabulary";

/** Issue statuses that close an issue. */
export const CLOSED_ISSUE_STATUSES = ["done", "cancelled"] as const;

/** What a due row needs done (due-work.sql decides it from the status). */
export type Work = "review" | "abandoned" | "hook" | "delete";

/** One row of due work, as due-work.sql returns it (locked for this batch). */
export interface DueRow {
  id: string;
  company_id: string;
  execution_workspace_id: string;
  source_issue_id: string;
  generation: number;
  kind: RestorePointKind;
  checkout_name: string | null;
  status: RestorePointStatus;
  storage_provider: string;
  storage_key: string;
  byte_size: bigint | null;
  delete_after: Date | null;
  activated_at: Date | null;
  created_at: Date;
  work: Work;
}

/** A source issue's tree, as tree-state.sql returns it; absent when the issue is gone. */
export interface TreeState {
  source_issue_id: string;
  open: boolean;
  /** Latest close (completed_at / cancelled_at, else updated_at) over the tree. */
  latest_close: Date;
}

export type Review =
  | { action: "clear"; reason: "tree_open" }
  | { action: "schedule"; reason: "retention_pending"; at: Date }
  | { action: "expire"; because: "tree_closed" }
  | { action: "delete"; because: "source_issue_gone" };

export interface Judge {
  now: Date;
  retentionMs: number;
}

export function reviewRestorePoint(
  row: Pick<DueRow, "kind" | "activated_at">,
  tree: TreeState | undefined,
  judge: Judge,
): Review {
  if (tree === undefined) return { action: "delete", because: "source_issue_gone" };
  if (tree.open) return { action: "clear", reason: "tree_open" };
  let from = tree.latest_close.getTime();
  if (row.kind === "task_directory" && row.activated_at !== null) {
    from = Math.max(from, row.activated_at.getTime());
  }
  const expiresAt = from + judge.retentionMs;
  if (expiresAt > judge.now.getTime()) {
    return { action: "schedule", reason: "retention_pending", at: new Date(expiresAt) };
  }
  return { action: "expire", because: "tree_closed" };
}
