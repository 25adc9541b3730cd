/**
 * Controls for isolated task directories (spec: "Isolated task directories", "Controls and
 * logs"). Names and defaults are the product's contract. `PAPERCLIP_GIT_RESTORE_POINTS_ENABLED`
 * and `PAPERCLIP_GIT_RESTORE_POINT_TERMINAL_DELAY_DAYS` are the git restore points' own ("the
 * same delay git restore points use"), defined once there (`restorePointOptions`).
 */
import type { LoadInstanceKeyOptions, StorageConfig, TreeSnapshotLimits } from "@reclaim/shared";
import { DAY_MS, HOUR_MS } from "../../clock";
import { booleanOption, integerOption, readOptions, type Env } from "../../config";
import { serviceOptions } from "../../config/service";
import { readPaperclipStorage } from "../../storage";
import { restorePointOptions } from "../git-restore-points/config";
import type { DomainControls } from "../types";

export const options = {
  enabled: booleanOption(
    "PAPERCLIP_TASK_DIRECTORY_RETENTION_ENABLED",
    false,
    "Set true to let the reaper handle task directories",
  ),
  dryRun: booleanOption(
    "PAPERCLIP_TASK_DIRECTORY_RETENTION_DRY_RUN",
    true,
    "Set false to save and remove; a dry run only reports candidates and needs no restore points",
  ),
  orphanGraceDays: integerOption(
    "PAPERCLIP_TASK_DIRECTORY_ORPHAN_GRACE_DAYS",
    7,
    "Days an orphan's issue tree must be closed and its contents unchanged before removal",
    { min: 1, unit: "days" },
  ),
  // Defined once, by the git restore points (git-restore-points/config.ts).
  ...restorePointOptions,
};

export interface TaskDirectoriesConfig extends DomainControls {
  orphanGraceMs: number;
  terminalDelayMs: number;
  restorePointsEnabled: boolean;
  storage: StorageConfig;
  /** Where the instance secrets key comes from (`loadInstanceKey`'s options). */
  instanceKey: LoadInstanceKeyOptions;
}

export function readConfig(env: Env): TaskDirectoriesConfig {
  const values = readOptions(options, env);
  return {
    enabled: values.enabled,
    dryRun: values.dryRun,
    orphanGraceMs: values.orphanGraceDays * DAY_MS,
    terminalDelayMs: values.terminalDelayDays * DAY_MS,
    restorePointsEnabled: values.restorePointsEnabled,
    storage: readPaperclipStorage(env),
    instanceKey: { env: { ...env }, instanceRoot: serviceOptions.instanceRoot.read(env) },
  };
}

/** Where tasks without a repository run, under the instance root: `<dir>/<companyId>/<issueId>/`. */
export const ISOLATED_DIR = "isolated-workspaces";

/** The restore point limits (spec). */
export const SNAPSHOT_LIMITS: TreeSnapshotLimits = {
  maxFiles: 20_000,
  maxFileBytes: 64 * 1024 * 1024,
  maxTotalBytes: 256 * 1024 * 1024,
};

export const LIMITS = {
  /** Open task directories saved and removed per sweep (skipped ones do not count). */
  savesPerSweep: 8,
  /** Issue directories the orphan walk inspects per sweep. */
  directoriesPerSweep: 8,
  /** Items (workspaces, directories) one company job judges. */
  itemsPerBatch: 50,
  /** A lock that was busy, or a live consumer: look again after this. */
  busyRetryMs: HOUR_MS,
  /** Leftover `.expired-*` / `.restoring-*` directories older than this are deleted. */
  leftoverAgeMs: HOUR_MS,
} as const;
