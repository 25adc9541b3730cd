/** A restore point's statuses (its lifecycle: ../restore-points/index.ts) and kinds, as stored in `execution_workspace_restore_points`. */
export const RESTORE_POINT_STATUSES = [
  "pending",
  "active",
  "expiring",
  "superseded",
  "delete_requested",
  "deleted",
] as const;
export type RestorePointStatus = (typeof RESTORE_POINT_STATUSES)[number];

export const RESTORE_POINT_KINDS = ["worktree", "nested_checkout", "task_directory"] as const;
export type RestorePointKind = (typeof RESTORE_POINT_KINDS)[number];
