/**
 * The spec's conditions as pure functions of what was read.
 *
 * An open task directory row (`project_primary`, `local_fs`, `isolated_workspace` or
 * `shared_workspace`, cwd exactly `<instance>/isolated-workspaces/<company>/<issue>` of its
 * source issue) is saved and removed once every issue of its tree has been closed for the
 * terminal delay, and, checked under the source lock and the workspace lifecycle
 * lock: the source issue is still bound to it (`issue_not_bound`); nothing uses it
 * (`live_or_unresolved_consumer`); no other open workspace or project workspace points into
 * the directory (`task_directory_in_use`); the directory is a real directory
 * (`unsafe_task_directory`); restore points are enabled (`restore_points_disabled`; a dry
 * run needs none).
 *
 * An issue directory of the orphan walk is open (an open row points at or into it: that row
 * is judged as above), closed but bound (a closed row its issue is still bound to: saved on
 * that row and removed, `preserved_and_removed`), or an orphan, removed when its issue is
 * gone or its whole tree has been closed for the orphan grace, nothing in it changed during
 * that time, and no project workspace, live runtime service, unsettled run, finalization,
 * live lease or unresolved recovery action refers to it.
 */
import type { Consumer, SubjectFacts, WorkspaceRow } from "../../workspaces";

/** Is this row a task directory row? (the spec's exact shape) */
export function isTaskDirectoryRow(row: WorkspaceRow, expectedPath: string | null): boolean {
  return (
    row.strategy_type === "project_primary" &&
    row.provider_type === "local_fs" &&
    (row.mode === "isolated_workspace" || row.mode === "shared_workspace") &&
    expectedPath !== null &&
    row.cwd === expectedPath
  );
}

export type Verdict =
  { save: true } | { save: false; reason: string; recheckAt: Date | null; detail?: string[] };

export interface RowFacts {
  facts: SubjectFacts | undefined;
  consumers: Consumer[];
  /** Other open workspace rows or project workspaces whose cwd is at or below the directory. */
  otherRefs: number;
  directory: "directory" | "symlink" | "missing" | "other";
}

export interface Judge {
  now: Date;
  terminalDelayMs: number;
  busyRetryMs: number;
  /** Restore points enabled, or a dry run (which needs none). */
  restorePointsUsable: boolean;
}

export function judgeRow(input: RowFacts, judge: Judge): Verdict {
  const { facts } = input;
  if (!facts?.root_exists) return { save: false, reason: "issue_missing", recheckAt: null };
  if (facts.tree_open) return { save: false, reason: "issue_open", recheckAt: null };
  const closedAt = facts.tree_latest_close?.getTime() ?? 0;
  if (closedAt + judge.terminalDelayMs > judge.now.getTime()) {
    return { save: false, reason: "terminal_delay", recheckAt: new Date(closedAt + judge.terminalDelayMs) };
  }
  if (!facts.root_bound) return { save: false, reason: "issue_not_bound", recheckAt: null };
  if (input.consumers.length > 0) {
    return {
      save: false,
      reason: "live_or_unresolved_consumer",
      recheckAt: new Date(judge.now.getTime() + judge.busyRetryMs),
      detail: input.consumers,
    };
  }
  if (input.otherRefs > 0) return { save: false, reason: "task_directory_in_use", recheckAt: null };
  if (input.directory === "missing")
    return { save: false, reason: "task_directory_missing", recheckAt: null };
  if (input.directory !== "directory")
    return { save: false, reason: "unsafe_task_directory", recheckAt: null };
  if (!judge.restorePointsUsable) return { save: false, reason: "restore_points_disabled", recheckAt: null };
  return { save: true };
}

export type Classification =
  { kind: "open"; workspaceId: string } | { kind: "closed_bound"; workspaceId: string } | { kind: "orphan" };

/** The orphan walk's classification of one issue directory, from the rows that point at or into it. */
export function classify(
  refs: { kind: string; id: string; status: string | null; exact: boolean }[],
  boundWorkspaceId: string | null,
): Classification {
  const rows = refs.filter((r) => r.kind === "workspace");
  const open = rows.find((r) => r.status !== "archived" && r.status !== "cleanup_failed");
  if (open) return { kind: "open", workspaceId: open.id };
  const bound = rows.find((r) => r.exact && r.id === boundWorkspaceId);
  if (bound) return { kind: "closed_bound", workspaceId: bound.id };
  return { kind: "orphan" };
}

export interface OrphanFacts {
  facts: SubjectFacts | undefined;
  consumers: Consumer[];
  projectRefs: number;
  /** Newest modification of any entry (ms), the directory itself included. */
  newestMtimeMs: number;
}

export function judgeOrphan(
  input: OrphanFacts,
  judge: { now: Date; graceMs: number; busyRetryMs: number },
): Verdict {
  const now = judge.now.getTime();
  const { facts } = input;
  if (input.projectRefs > 0) return { save: false, reason: "task_directory_in_use", recheckAt: null };
  if (input.consumers.length > 0) {
    return {
      save: false,
      reason: "live_or_unresolved_consumer",
      recheckAt: new Date(now + judge.busyRetryMs),
      detail: input.consumers,
    };
  }
  const unchangedUntil = input.newestMtimeMs + judge.graceMs;
  if (!facts?.root_exists) {
    // The issue is gone: removed (its contents need no grace, but a directory written to just
    // now may belong to an issue row not yet visible; the mtime grace covers that too).
    return unchangedUntil > now
      ? { save: false, reason: "recently_changed", recheckAt: atOrAfter(unchangedUntil) }
      : { save: true };
  }
  if (facts.tree_open) return { save: false, reason: "issue_open", recheckAt: null };
  const closedUntil = (facts.tree_latest_close?.getTime() ?? 0) + judge.graceMs;
  const until = Math.max(closedUntil, unchangedUntil);
  if (until > now) {
    return {
      save: false,
      reason: closedUntil > now ? "orphan_grace" : "recently_changed",
      recheckAt: atOrAfter(until),
    };
  }
  return { save: true };
}

/** A deadline no earlier than `ms` (file times have sub-millisecond parts a Date drops). */
const atOrAfter = (ms: number) => new Date(Math.ceil(ms));
