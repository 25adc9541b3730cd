/**
 * Controls for native workspace sync folder retention (spec: "Native workspace sync
 * folders"). Names and defaults are the product's contract.
 */
import { DAY_MS } from "../../clock";
import { booleanOption, integerOption, readOptions, type Env } from "../../config";
import { assumeEmptyOption } from "../sources";
import type { DomainControls } from "../types";
import { SOURCES, type SourceRule } from "./rules";

export const options = {
  enabled: booleanOption(
    "PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_ENABLED",
    true,
    "Set false to stop removing native workspace sync folders",
  ),
  dryRun: booleanOption(
    "PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN",
    false,
    "Set true to report candidates without removing folders",
  ),
  days: integerOption(
    "PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DAYS",
    7,
    "Days a run must be finished, and its folder untouched, before removal",
    { min: 1, unit: "days" },
  ),
  assumeEmpty: assumeEmptyOption("RECLAIM_NATIVE_WORKSPACE_SYNC_ASSUME_EMPTY", SOURCES),
};

export interface NativeWorkspaceSyncConfig extends DomainControls {
  days: number;
  windowMs: number;
  assumeEmpty: readonly SourceRule[];
}

export function readConfig(env: Env): NativeWorkspaceSyncConfig {
  const values = readOptions(options, env);
  return { ...values, windowMs: values.days * DAY_MS };
}

/** Batch limits from the spec; each walk continues where the previous batch stopped. */
export const LIMITS = {
  leftoversPerBatch: 50,
  foldersPerBatch: 200,
  removalsPerBatch: 50,
  /** Start-up deadline discovery reads run state this many folders at a time. */
  discoveryChunk: 200,
} as const;

/** Where runs write their folders, under the instance root. */
export const SYNC_DIR = "native-workspace-sync";
