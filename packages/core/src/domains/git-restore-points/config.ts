/**
 * Controls for git cache expiration with restore points (spec: "Git workspace restore
 * points"). Names and defaults are the product's contract. The dry run is the domain's own
 * (`PAPERCLIP_GIT_CACHE_EXPIRATION_DRY_RUN`): it reports candidates and skip reasons, and
 * captures, seals and removes nothing.
 *
 * `PAPERCLIP_GIT_RESTORE_POINTS_ENABLED` and `PAPERCLIP_GIT_RESTORE_POINT_TERMINAL_DELAY_DAYS`
 * are shared with task directories (the spec: "the same delay git restore points use"): they
 * are defined once here, in `restorePointOptions`, and read by both domains.
 */
import type { LoadInstanceKeyOptions, StorageConfig } from "@reclaim/shared";
import { DAY_MS, MINUTE_MS } from "../../clock";
import { booleanOption, integerOption, readOptions, type Env } from "../../config";
import { instanceKeyOptions, readPaperclipStorage } from "../../storage";
import type { DomainControls } from "../types";

/** The restore-point controls every domain that saves restore points shares. */
export const restorePointOptions = {
  restorePointsEnabled: booleanOption(
    "PAPERCLIP_GIT_RESTORE_POINTS_ENABLED",
    false,
    "Set true to let expiration save a restore point and remove worktrees with unpushed, uncommitted, untracked or history-only work",
  ),
  terminalDelayDays: integerOption(
    "PAPERCLIP_GIT_RESTORE_POINT_TERMINAL_DELAY_DAYS",
    3,
    "Days the issues that use a workspace must all have been closed before it is saved in a restore point and removed",
    { min: 0, unit: "days" },
  ),
};

export const options = {
  enabled: booleanOption(
    "PAPERCLIP_GIT_CACHE_EXPIRATION_ENABLED",
    false,
    "Set true to remove closed (and idle) issues' git worktrees, keeping whatever their remote cannot reproduce",
  ),
  dryRun: booleanOption(
    "PAPERCLIP_GIT_CACHE_EXPIRATION_DRY_RUN",
    false,
    "Set true to report candidates and skip reasons without capturing, saving or removing anything",
  ),
  ...restorePointOptions,
  idleDays: integerOption(
    "PAPERCLIP_GIT_RESTORE_POINT_IDLE_DAYS",
    7,
    "Days nothing may touch an open issue tree's workspace before it is saved and removed (0 turns idle expiration off)",
    { min: 0, unit: "days" },
  ),
};

export interface GitRestorePointsConfig extends DomainControls {
  restorePointsEnabled: boolean;
  terminalDelayMs: number;
  /** `null`: idle expiration is off. */
  idleMs: number | null;
  storage: StorageConfig;
  /** Where the instance secrets key comes from (`loadInstanceKey`'s options). */
  instanceKey: LoadInstanceKeyOptions;
}

export function readConfig(env: Env): GitRestorePointsConfig {
  const values = readOptions(options, env);
  return {
    enabled: values.enabled,
    dryRun: values.dryRun,
    restorePointsEnabled: values.restorePointsEnabled,
    terminalDelayMs: values.terminalDelayDays * DAY_MS,
    idleMs: values.idleDays === 0 ? null : values.idleDays * DAY_MS,
    storage: readPaperclipStorage(env),
    instanceKey: instanceKeyOptions(env),
  };
}

/** Limits and intervals (spec: 15-minute retry; batch sizes are Reclaim's, like task directories'). */
export const LIMITS = {
  /** Workspaces judged per batch; a full batch continues at once. */
  workspacesPerBatch: 8,
  /** A failure or a busy lock is tried again after this. */
  retryMs: 15 * MINUTE_MS,
  /**
   * How long one workspace's expiration (capture, seal, upload, read back, verify, the
   * archive transaction) may hold its transaction and locks.
   */
  expirationTimeoutMs: 30 * MINUTE_MS,
} as const;
