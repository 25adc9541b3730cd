/**
 * The spec's removal conditions for one sync folder, as a pure function of what was read.
 * A folder named for a run id, that is a real directory and whose newest file is older than
 * the window, is removed when one of these holds:
 *   - no run with that id exists;
 *   - the run is settled and has no valid workspace sync reference;
 *   - the run is settled and nothing else may still read the folder (finalization, exports,
 *     recovery actions, leases, retained recoveries, historical adoption).
 * Settled: succeeded/failed/cancelled/timed_out/interrupted, finished before the window, no
 * live process, no live controller lease, no finalization owner receipt.
 * A rule whose table only Reclaim writes on this database (sources/index.ts) cannot see
 * what it needs: the folder is kept as `source_unavailable` where that rule decides.
 * Every "keep" carries its reason and when to look again.
 */
import { SETTLED_RUN_STATUSES } from "../../events/catalog";
import type { RecordedProcess } from "../../process/liveness";
import type { SourceRules } from "../sources";

/** The rules of this domain that read a table, and the tables each reads. */
export const SOURCES = {
  finalizations: ["native_run_finalizations"],
  recovery_actions: ["issue_recovery_actions"],
  leases: ["environment_leases"],
  retained_recoveries: ["retained_workspace_recoveries"],
  historical_adoptions: ["historical_recovery_adoptions"],
} as const satisfies SourceRules<string>;

export type SourceRule = keyof typeof SOURCES;

export interface RunState {
  id: string;
  company_id: string;
  status: string;
  finished_at: Date | null;
  process_pid: number | null;
  process_group_id: number | null;
  process_started_at: Date | null;
  sync_ref_valid: boolean;
  has_lease: boolean;
  has_local_lease: boolean;
  live_controller_lease: boolean;
  lease_resume_or_cleanup: boolean;
  referenced_lease_destroyed: boolean;
  owner_receipt: boolean;
  finalization_unsettled: boolean;
  export_active: boolean;
  unverified_recovery: boolean;
  retained_recovery_pending: boolean;
  adoption_pending: boolean;
}

export interface FolderFacts {
  newestMtimeMs: number;
}

export type KeepReason =
  | "folder_recently_modified"
  | "run_not_settled"
  | "run_finish_unknown"
  | "run_finished_within_window"
  | "run_process_live"
  | "live_controller_lease"
  | "finalization_owner_receipt"
  | "finalization_unsettled"
  | "workspace_export_active"
  | "recovery_action_unverified"
  | "lease_export_resume_or_cleanup"
  | "retained_recovery_pending"
  | "historical_adoption_pending"
  | "source_unavailable";

export type Verdict =
  | { remove: true; because: "no_run" | "no_sync_reference" | "nothing_reads_it" }
  | { remove: false; reason: KeepReason; recheckAt: Date };

export interface Judge {
  now: Date;
  windowMs: number;
  isLive(process: RecordedProcess): boolean;
  /** Rules whose source tables nothing but Reclaim writes here (none: all visible). */
  unavailable?: ReadonlySet<SourceRule>;
}

/**
 * Whether `judgeFolder` can find a folder of this run removable at all, from the run's status
 * and finish alone: it never removes a folder of a run that is not settled or finished within
 * the window. Only decides how many folders a batch surveys (check.ts); every decision is
 * `judgeFolder`'s.
 */
export function mayBeRemovable(
  run: Pick<RunState, "status" | "finished_at">,
  judge: Pick<Judge, "now" | "windowMs">,
): boolean {
  return (
    SETTLED_RUN_STATUSES.has(run.status) &&
    run.finished_at !== null &&
    run.finished_at.getTime() <= judge.now.getTime() - judge.windowMs
  );
}

export function judgeFolder(folder: FolderFacts, run: RunState | null, judge: Judge): Verdict {
  const now = judge.now.getTime();
  const cutoff = now - judge.windowMs;
  const keep = (reason: KeepReason, at = now + judge.windowMs): Verdict => ({
    remove: false,
    reason,
    recheckAt: new Date(at),
  });

  if (folder.newestMtimeMs > cutoff) {
    // Look again when both clocks have run out, not just the folder's.
    const finished = run?.finished_at && SETTLED_RUN_STATUSES.has(run.status) ? run.finished_at.getTime() : 0;
    return keep("folder_recently_modified", Math.max(folder.newestMtimeMs, finished) + judge.windowMs);
  }
  if (run === null) return { remove: true, because: "no_run" };

  const blind = (rule: SourceRule) => judge.unavailable?.has(rule) ?? false;
  if (!SETTLED_RUN_STATUSES.has(run.status)) return keep("run_not_settled");
  if (run.finished_at === null) return keep("run_finish_unknown");
  if (run.finished_at.getTime() > cutoff)
    return keep("run_finished_within_window", run.finished_at.getTime() + judge.windowMs);
  if (blind("leases")) return keep("source_unavailable");
  // A recorded process only counts where it can be the run's own: a local lease or none.
  const processCouldBeLocal = run.has_local_lease || !run.has_lease;
  if (
    processCouldBeLocal &&
    judge.isLive({
      pid: run.process_pid,
      processGroupId: run.process_group_id,
      startedAt: run.process_started_at,
    })
  ) {
    return keep("run_process_live");
  }
  if (run.live_controller_lease) return keep("live_controller_lease");
  if (blind("finalizations")) return keep("source_unavailable");
  if (run.owner_receipt) return keep("finalization_owner_receipt");

  if (!run.sync_ref_valid) return { remove: true, because: "no_sync_reference" };

  if (run.finalization_unsettled) return keep("finalization_unsettled");
  if (blind("recovery_actions")) return keep("source_unavailable");
  if (run.export_active) return keep("workspace_export_active");
  if (run.unverified_recovery) return keep("recovery_action_unverified");
  if (run.lease_resume_or_cleanup) return keep("lease_export_resume_or_cleanup");
  if (!run.referenced_lease_destroyed) {
    if (blind("retained_recoveries")) return keep("source_unavailable");
    if (run.retained_recovery_pending) return keep("retained_recovery_pending");
  }
  if (blind("historical_adoptions")) return keep("source_unavailable");
  if (run.adoption_pending) return keep("historical_adoption_pending");
  return { remove: true, because: "nothing_reads_it" };
}
