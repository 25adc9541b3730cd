/**
 * Controls for native session failover backup expiration and native runner evidence
 * retention (spec: "Native session failover backups", "Continuity-break archives and
 * quarantined session state"). Names and defaults are the product's contract, except
 * RECLAIM_LIVENESS_MAX_AGE_SECONDS, which is Reclaim's (the spec's "in this process").
 */
import { DAY_MS, MINUTE_MS } from "../../clock";
import { booleanOption, integerOption, readOptions, type Env } from "../../config";
import { MAX_EVIDENCE_DAYS } from "../../events";
import { assumeEmptyOption } from "../sources";
import type { DomainControls } from "../types";
import { SOURCES, type SourceRule } from "./rules";

export const options = {
  enabled: booleanOption(
    "PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_ENABLED",
    true,
    "Set false to stop expiring copies (and removing continuity-break archives and quarantine entries)",
  ),
  dryRun: booleanOption(
    "PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_DRY_RUN",
    false,
    "Set true to report candidates without deleting copies, task sessions or evidence",
  ),
  days: integerOption(
    "PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_DAYS",
    7,
    "Days an issue must be closed before its sessions' copies expire",
    { min: 1, unit: "days" },
  ),
  evidenceDays: integerOption(
    "PAPERCLIP_NATIVE_RUNNER_EVIDENCE_RETENTION_DAYS",
    7,
    "Days continuity-break archives and quarantined session state are kept",
    { min: 1, max: MAX_EVIDENCE_DAYS, unit: "days" },
  ),
  livenessMaxAgeSeconds: integerOption(
    "RECLAIM_LIVENESS_MAX_AGE_SECONDS",
    300,
    "Age after which the Paperclip server's last native_sessions.live report says nothing (every copy and entry is kept)",
    { min: 1, unit: "seconds" },
  ),
  assumeEmpty: assumeEmptyOption("RECLAIM_NATIVE_HARNESS_BACKUP_ASSUME_EMPTY", SOURCES),
};

export interface NativeSessionBackupsConfig extends DomainControls {
  days: number;
  evidenceDays: number;
  livenessMaxAgeSeconds: number;
  windowMs: number;
  evidenceWindowMs: number;
  assumeEmpty: readonly SourceRule[];
}

export function readConfig(env: Env): NativeSessionBackupsConfig {
  const values = readOptions(options, env);
  return { ...values, windowMs: values.days * DAY_MS, evidenceWindowMs: values.evidenceDays * DAY_MS };
}

/** Batch limits from the spec, shared by sessions, evidence entries and leftovers. */
export const LIMITS = {
  entriesPerBatch: 200,
  removalsPerBatch: 50,
} as const;

/** The hourly sweep; the first one runs two minutes after the scheduler is ready. */
export const SWEEP_INTERVAL_MS = 60 * MINUTE_MS;
export const FIRST_SWEEP_DELAY_MS = 2 * MINUTE_MS;

/** Under the instance root. */
export const SESSIONS_DIR = "runtime/paperclip-runner/durable-sessions";
/** In a session directory. */
export const BACKUPS_DIR = "failover-backups";
export const CURRENT = "current";
export const CONTROL_PLANE_STATE = "control-plane.json";
/** An entry of a session directory whose name starts with this is a pending cleanup activation. */
export const CLEANUP_ACTIVATION_PREFIX = "cleanup-activation";
export const CONTINUITY_BREAKS_DIR = "continuity-breaks";
/** Beside the session directories. */
export const QUARANTINE_DIR = "quarantine";
/** Larger control-plane state is not read: the sweep cannot identify the session's runs. */
export const MAX_CONTROL_PLANE_STATE_BYTES = 4 * 1024 * 1024;
/** A copy's `manifest.json` larger than this is not read (its completedAt then says nothing). */
export const MAX_COPY_MANIFEST_BYTES = 1024 * 1024;
