/**
 * Controls for skill version cache retention (spec: "Skill version caches"). Names and
 * defaults are the product's contract.
 */
import type { StorageConfig } from "@reclaim/shared";
import { MINUTE_MS } from "../../clock";
import { booleanOption, integerOption, readOptions, type Env } from "../../config";
import { assumeEmptyOption } from "../sources";
import { readPaperclipStorage } from "../../storage";
import type { DomainControls } from "../types";
import { SOURCES, type SourceRule } from "./rules";

export const options = {
  enabled: booleanOption(
    "PAPERCLIP_SKILL_VERSION_RETENTION_ENABLED",
    true,
    "Set false to stop future sweeps; restoration stays available",
  ),
  dryRun: booleanOption(
    "PAPERCLIP_SKILL_VERSION_RETENTION_DRY_RUN",
    false,
    "Set true to report candidates without changing cache or access records",
  ),
  keep: integerOption(
    "PAPERCLIP_SKILL_VERSION_RETENTION_KEEP",
    0,
    "Newest versions of each skill (by revision number) whose caches are always kept",
    { min: 0, unit: "versions" },
  ),
  graceMinutes: integerOption(
    "PAPERCLIP_SKILL_VERSION_RETENTION_GRACE_MINUTES",
    60,
    "Minutes a non-current version must go unused before its cache is evicted",
    { min: 1, unit: "minutes" },
  ),
  assumeEmpty: assumeEmptyOption("RECLAIM_SKILL_VERSION_RETENTION_ASSUME_EMPTY", SOURCES),
};

export interface SkillVersionCachesConfig extends DomainControls {
  keep: number;
  graceMinutes: number;
  graceMs: number;
  assumeEmpty: readonly SourceRule[];
  /** Paperclip's storage, where durable skill packages live (PAPERCLIP_STORAGE_*). */
  storage: StorageConfig;
}

export function readConfig(env: Env): SkillVersionCachesConfig {
  const values = readOptions(options, env);
  return { ...values, graceMs: values.graceMinutes * MINUTE_MS, storage: readPaperclipStorage(env) };
}

/** Batch limits from the spec; each walk continues where the previous batch stopped. */
export const LIMITS = {
  versionsPerBatch: 50,
  /** Interrupted trash removals finished per batch (own cursor). */
  trashPerBatch: 50,
  /**
   * Independent filesystem reads outside the lock (proving skill levels, listing skills,
   * surveying versions) in flight at once: enough to keep the disk busy between round trips
   * to the thread pool (libuv: 4 threads), few enough to leave it to Paperclip.
   */
  fsWidth: 4,
} as const;

/** Under the instance root: `skills/<company>/__versions__/<skill>/<version>`. */
export const SKILLS_DIR = "skills";
export const VERSIONS_DIR = "__versions__";
export const ACCESS_DIR = "__version_access__";
/** In ACCESS_DIR: when this Reclaim started observing an installation without last-use records. */
export const OBSERVATION_MARKER = ".observation-started";

/**
 * Advisory lock namespaces shared with the Paperclip server (contract, see README.md):
 * preparation, pin persistence and eviction hold the company lock; trash deletion holds
 * the trash lock instead, so preparation is never blocked by a long delete. Key: company id.
 */
export const LOCKS = {
  company: "paperclip.company_skill_versions",
  trash: "paperclip.company_skill_version_trash",
} as const;

export const SWEEP_INTERVAL_MS = 60 * MINUTE_MS;
