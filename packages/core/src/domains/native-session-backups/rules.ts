/**
 * The spec's expiry conditions, as pure functions of what was read.
 *
 * A session's `failover-backups/current` copy expires when all of these hold:
 *   - the Paperclip server's liveness report is fresh and the session is not executing,
 *     initializing, warm or closing in it, and no cleanup activation is pending (reported,
 *     or a `cleanup-activation*` entry in the session directory);
 *   - its control-plane state can be read (present, a file, at most 4 MB, valid);
 *   - the copy was written before the window;
 *   - no run of the session is queued, running or unfinished;
 *   - every issue the session ran on is done or cancelled, and closed before the window;
 *   - every native run finalization of the session is settled, with no recovery in progress;
 *   - no active, released, retained or pending-cleanup environment lease references the copy.
 *
 * An evidence entry is removed once its age (the epoch in its name, or its modification
 * time when that epoch is in the future) passes the evidence window, while the liveness
 * report is fresh and its session is not live. Cleanup quarantine entries, symlinks,
 * non-directories and names that are not evidence are kept.
 */
import type { EvidenceEntry } from "./evidence";
import type { SessionSurvey } from "./survey";
import type { SourceRules } from "../sources";

export const LIVE_STATES = new Set(["executing", "initializing", "warm", "closing"]);

export interface LiveSession {
  id: string;
  /** Absent for a session the report lists only for a pending cleanup. */
  state?: string;
  cleanupPending?: boolean;
}

/**
 * What the last `native_sessions.live` report says, judged against the job's clock. Its age
 * counts from when the server took it, but never from later than Reclaim received it
 * (queries.ts): a report dated in the future by a skewed clock is not fresh for longer.
 */
export type Liveness = { known: false } | { known: true; live: Map<string, LiveSession> };

export function livenessAt(
  report: { sessions: LiveSession[]; reportedAt: Date } | null,
  now: Date,
  maxAgeMs: number,
): Liveness {
  if (report === null || now.getTime() - report.reportedAt.getTime() > maxAgeMs) return { known: false };
  return { known: true, live: new Map(report.sessions.map((s) => [s.id, s])) };
}

export interface SessionFacts {
  scope: string;
  run_ids: string[];
  unfinished_run: boolean;
  open_issue: boolean;
  last_issue_closed_at: Date | null;
  finalization_unsettled: boolean;
  recovery_in_progress: boolean;
  lease_reference: boolean;
  issue_ids: string[];
  task_session_ids: string[];
}

export type SessionKeepReason =
  | "symlink"
  | "not_a_directory"
  | "path_changed"
  | "no_backup_copy"
  | "liveness_unknown"
  | "session_live"
  | "cleanup_activation_pending"
  | "control_plane_state_missing"
  | "control_plane_state_unreadable"
  | "control_plane_state_too_large"
  | "copy_written_within_window"
  | "copy_manifest_unreadable"
  | "run_unfinished"
  | "issue_open"
  | "issue_closed_within_window"
  | "finalization_unsettled"
  | "recovery_in_progress"
  | "lease_references_copy"
  | "source_unavailable";

export type SessionVerdict = { expire: true } | { expire: false; reason: SessionKeepReason };

/** The rules of the copy expiry that read a table, and the tables each reads (sources/index.ts). */
export const SOURCES = {
  finalizations: ["native_run_finalizations"],
  recovery_actions: ["issue_recovery_actions"],
  leases: ["environment_leases"],
  task_sessions: ["agent_task_sessions"],
} as const satisfies SourceRules<string>;

export type SourceRule = keyof typeof SOURCES;

export interface Judge {
  now: Date;
  windowMs: number;
  liveness: Liveness;
  /** Rules whose source tables nothing but Reclaim writes here (none: all visible). */
  unavailable?: ReadonlySet<SourceRule>;
}

/** What a session's directory says, before any row is read (null: go on to the rows). */
function filesystemVerdict(session: SessionSurvey, judge: Judge): SessionVerdict | null {
  const keep = (reason: SessionKeepReason): SessionVerdict => ({ expire: false, reason });
  // A level refused on the way (the session directory or `failover-backups`): kept, with why.
  if (session.refused) {
    const reason = session.refused.reason;
    return keep(reason === "symlink" || reason === "not_a_directory" ? reason : "path_changed");
  }
  if (session.kind === "symlink" || session.current?.kind === "symlink") return keep("symlink");
  if (session.kind !== "directory") return keep("not_a_directory");
  if (session.current === null) return keep("no_backup_copy");
  if (session.current.kind !== "directory") return keep("not_a_directory");
  if (session.current.manifest === "unreadable") return keep("copy_manifest_unreadable");
  if (!judge.liveness.known) return keep("liveness_unknown");
  const live = judge.liveness.live.get(session.name);
  // Before `session_live`: a live session with a pending cleanup reports the cleanup.
  if (live?.cleanupPending || session.cleanupActivation) return keep("cleanup_activation_pending");
  if (live?.state && LIVE_STATES.has(live.state)) return keep("session_live");
  if (session.state.status !== "ok")
    return keep(`control_plane_state_${session.state.status}` as SessionKeepReason);
  if (session.current.writtenAtMs > judge.now.getTime() - judge.windowMs)
    return keep("copy_written_within_window");
  return null;
}

/** Whether the rows need reading at all for this session. */
export function needsRows(session: SessionSurvey, judge: Judge): boolean {
  return filesystemVerdict(session, judge) === null;
}

export function judgeSession(
  session: SessionSurvey,
  facts: SessionFacts | null,
  judge: Judge,
): SessionVerdict {
  const early = filesystemVerdict(session, judge);
  if (early !== null) return early;
  const keep = (reason: SessionKeepReason): SessionVerdict => ({ expire: false, reason });
  // Rows are read for every identifiable session; a missing row set means it was not read.
  if (facts === null) return keep("control_plane_state_unreadable");
  if (facts.unfinished_run) return keep("run_unfinished");
  if (facts.open_issue) return keep("issue_open");
  if (
    facts.last_issue_closed_at &&
    facts.last_issue_closed_at.getTime() > judge.now.getTime() - judge.windowMs
  ) {
    return keep("issue_closed_within_window");
  }
  // A table only Reclaim writes here says nothing: the copy stays.
  for (const rule of Object.keys(SOURCES) as SourceRule[])
    if (judge.unavailable?.has(rule)) return keep("source_unavailable");
  if (facts.finalization_unsettled) return keep("finalization_unsettled");
  if (facts.recovery_in_progress) return keep("recovery_in_progress");
  if (facts.lease_reference) return keep("lease_references_copy");
  return { expire: true };
}

export type EvidenceKeepReason =
  | "vanished"
  | "symlink"
  | "not_a_directory"
  | "unrecognized_name"
  | "cleanup_quarantine_kept"
  | "within_retention"
  | "liveness_unknown"
  | "session_live";

export type EvidenceVerdict =
  | { remove: true; leftover: boolean }
  | { remove: false; reason: EvidenceKeepReason; dueAt?: Date; busy?: boolean };

export function judgeEvidence(
  entry: EvidenceEntry,
  judge: { now: Date; windowMs: number; liveness: Liveness },
): EvidenceVerdict {
  const keep = (
    reason: EvidenceKeepReason,
    extra: { dueAt?: Date; busy?: boolean } = {},
  ): EvidenceVerdict => ({
    remove: false,
    reason,
    ...extra,
  });
  if (entry.kind === "missing") return keep("vanished");
  if (entry.kind === "symlink") return keep("symlink");
  if (entry.kind !== "directory") return keep("not_a_directory");
  const name = entry.name;
  if (name.type === "leftover") return { remove: true, leftover: true };
  if (name.type === "unrecognized") return keep("unrecognized_name");
  if (name.type === "cleanup") return keep("cleanup_quarantine_kept");
  const now = judge.now.getTime();
  const writtenAt = name.epochMs > now ? entry.mtimeMs : name.epochMs;
  const dueAt = writtenAt + judge.windowMs;
  if (dueAt > now) return keep("within_retention", { dueAt: new Date(dueAt) });
  if (!judge.liveness.known) return keep("liveness_unknown", { busy: true });
  const live = judge.liveness.live.get(name.session);
  if (live?.state && LIVE_STATES.has(live.state)) return keep("session_live", { busy: true });
  return { remove: true, leftover: false };
}
