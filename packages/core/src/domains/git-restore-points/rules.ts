/**
 * The spec's conditions for one git worktree workspace, as a pure function of what was read
 * (the workspace row, Paperclip's facts about its issue tree, the clock and the controls):
 * expire now (and why: the tree closed, or nothing touched an open tree), or wait, with the
 * skip reason and when to look again (null: only when a change wakes it).
 *
 * Order, first that applies:
 *  1. not a git worktree workspace with a checkout path: not this domain's (forget it);
 *     a closed row: finish its removal when one is pending, else forget it;
 *  2. the source issue is gone: `source_issue_missing` (wait for a change);
 *  3. a live or unresolved consumer of the tree or the workspace (a run queued, running or
 *     unfinished, an unsettled native run finalization, a live environment or runtime lease,
 *     a live runtime service, an unresolved recovery action, a reopen not yet consumed), each
 *     its own reason: look again in 15 minutes;
 *  4. every issue that uses the workspace is closed (the terminal path): an open issue still
 *     bound to it keeps it (`issue_bound`); otherwise it expires at the latest close of those
 *     issues, plus the terminal delay in restore-point mode (`terminal_delay` until then);
 *  5. the tree is open (the idle path): with idle expiration on, it expires once nothing has
 *     touched it for the idle days (`idle_pending` until then: the deadline, no recurring
 *     checks); with it off, `tree_open` until a change.
 */
import type { SubjectFacts } from "../../workspaces";
import { consumersOf, isClosedWorkspaceStatus } from "../../workspaces";
import type { GitRestorePointsConfig } from "./config";
import { LIMITS } from "./config";
import type { GitWorkspace } from "./queries";
import { REMOVAL_KEY } from "./recipe";

export type Trigger = "terminal" | "idle";

export type Verdict =
  | { action: "expire"; trigger: Trigger }
  | { action: "wait"; reason: string; dueAt: Date | null }
  | { action: "finish_removal" }
  | { action: "forget" };

export interface JudgeInput {
  workspace: GitWorkspace;
  facts: SubjectFacts | undefined;
  config: Pick<GitRestorePointsConfig, "restorePointsEnabled" | "terminalDelayMs" | "idleMs">;
  now: Date;
}

export function isGitWorktree(w: Pick<GitWorkspace, "strategy_type" | "cwd">): boolean {
  return w.strategy_type === "git_worktree" && w.cwd !== null && w.cwd !== "";
}

function removalPending(metadata: unknown): boolean {
  return (
    metadata !== null &&
    typeof metadata === "object" &&
    (metadata as Record<string, unknown>)[REMOVAL_KEY] != null
  );
}

export function judgeWorkspace({ workspace: w, facts, config, now }: JudgeInput): Verdict {
  if (!isGitWorktree(w)) return { action: "forget" };
  if (isClosedWorkspaceStatus(w.status))
    return removalPending(w.metadata) ? { action: "finish_removal" } : { action: "forget" };
  if (w.source_issue_id === null || !facts?.root_exists)
    return { action: "wait", reason: "source_issue_missing", dueAt: null };
  const retry = new Date(now.getTime() + LIMITS.retryMs);
  const [consumer] = consumersOf(facts, [w.metadata], now);
  if (consumer) return { action: "wait", reason: consumer, dueAt: retry };

  if (!facts.users_open) {
    if (w.bound_open) return { action: "wait", reason: "issue_bound", dueAt: null };
    const closedAt = facts.users_latest_close ?? now;
    const delay = config.restorePointsEnabled ? config.terminalDelayMs : 0;
    const dueAt = new Date(closedAt.getTime() + delay);
    if (dueAt > now) return { action: "wait", reason: "terminal_delay", dueAt };
    return { action: "expire", trigger: "terminal" };
  }
  if (config.idleMs === null) return { action: "wait", reason: "tree_open", dueAt: null };
  const touched = w.last_touch ?? now;
  const dueAt = new Date(touched.getTime() + config.idleMs);
  if (dueAt > now) return { action: "wait", reason: "idle_pending", dueAt };
  return { action: "expire", trigger: "idle" };
}
