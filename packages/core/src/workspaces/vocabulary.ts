/**
 * Paperclip's execution-workspace vocabulary, as its server writes it
 * (server/src/services/execution-workspaces.ts, packages/shared/src/types/workspace-runtime.ts):
 * statuses, and the metadata keys of its lifecycle fence that Reclaim reads and writes.
 */
export const OPEN_WORKSPACE_STATUSES = ["active", "idle", "in_review"] as const;
export const CLOSED_WORKSPACE_STATUSES = ["archived", "cleanup_failed"] as const;

export const isClosedWorkspaceStatus = (status: string): boolean =>
  (CLOSED_WORKSPACE_STATUSES as readonly string[]).includes(status);

/**
 * `lifecycleGeneration`: raised by one on every archive and every reopen. A destructive
 * cleanup captures it at archive time and re-reads it under the lifecycle lock right before
 * it deletes: a reopen in between raised it, so the stale cleanup does nothing.
 */
export const LIFECYCLE_GENERATION_KEY = "lifecycleGeneration";
/** Set (with its timestamp) by a reopen until the run or comment that asked for it used the workspace. */
export const REOPEN_PENDING_KEY = "reopenPendingConsumption";
export const REOPEN_PENDING_SINCE_KEY = "reopenPendingConsumptionSince";
/**
 * Paperclip's STALE_REOPEN_PENDING_CONSUMPTION_GRACE_MS: a consuming request re-stamps the
 * flag more often than this, so an older flag is a stranded one whose consumer is gone.
 */
export const REOPEN_PENDING_GRACE_MS = 5 * 60 * 1000;

export type WorkspaceMetadata = Record<string, unknown>;

export function metadataOf(value: unknown): WorkspaceMetadata {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as WorkspaceMetadata)
    : {};
}

export function lifecycleGeneration(metadata: unknown): number {
  const raw = metadataOf(metadata)[LIFECYCLE_GENERATION_KEY];
  return typeof raw === "number" && Number.isInteger(raw) && raw >= 0 ? raw : 0;
}

/**
 * The workspace waits for a reopen to be consumed: the flag is set and not yet stranded
 * (younger than Paperclip's grace). A stranded flag says nothing; the runs, leases and
 * services of the tree are checked on their own.
 */
export function waitsForReopenConsumption(metadata: unknown, now: Date): boolean {
  const m = metadataOf(metadata);
  if (m[REOPEN_PENDING_KEY] !== true) return false;
  const since =
    typeof m[REOPEN_PENDING_SINCE_KEY] === "string" ? Date.parse(m[REOPEN_PENDING_SINCE_KEY]) : NaN;
  return Number.isNaN(since) || since > now.getTime() - REOPEN_PENDING_GRACE_MS;
}
