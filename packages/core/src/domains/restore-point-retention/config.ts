/**
 * Controls for restore-point retention (spec: "Restore points are encrypted saves ...").
 * The spec names one variable, PAPERCLIP_GIT_RESTORE_POINT_RETENTION_DAYS; the others are
 * Reclaim's own (RECLAIM_ prefix) so they can never collide with a future Paperclip name.
 * Storage follows Paperclip's variables (PAPERCLIP_STORAGE_*, read by @reclaim/shared).
 */
import type { StorageConfig } from "@reclaim/shared";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../../clock";
import {
  booleanOption,
  integerOption,
  optionalStringOption,
  readOptions,
  urlValidator,
  type Env,
} from "../../config";
import { signingSecret } from "../../config/service";
import { readPaperclipStorage } from "../../storage";
import type { DomainControls } from "../types";

export const options = {
  enabled: booleanOption(
    "RECLAIM_RESTORE_POINT_RETENTION_ENABLED",
    true,
    "Set false to stop reviewing and deleting restore points (the ledger API keeps working)",
  ),
  dryRun: booleanOption(
    "RECLAIM_RESTORE_POINT_RETENTION_DRY_RUN",
    false,
    "Set true to report what would expire or be deleted without changing rows or objects",
  ),
  days: integerOption(
    "PAPERCLIP_GIT_RESTORE_POINT_RETENTION_DAYS",
    90,
    "Days after its issue tree's latest close that a restore point expires",
    { min: 1, unit: "days" },
  ),
  expiryHookUrl: optionalStringOption(
    "RECLAIM_RESTORE_POINT_EXPIRY_HOOK_URL",
    "POST here (signed like report callbacks) when a restore point expires, before its object is deleted; unset: no hook",
    urlValidator(["http:", "https:"]),
  ),
  settleMs: integerOption(
    "RECLAIM_RESTORE_POINT_SETTLE_MS",
    5000,
    "After an issue change, how long the review waits for further changes before it runs (counted from the first change)",
    { min: 0, max: 10 * MINUTE_MS, unit: "ms" },
  ),
};

export interface ExpiryHook {
  url: string;
  /** HMAC key of the X-Reclaim-Signature header (RECLAIM_CALLBACK_SECRET, never the API token). */
  secret: string;
}

export interface RestorePointRetentionConfig extends DomainControls {
  days: number;
  retentionMs: number;
  settleMs: number;
  expiryHook: ExpiryHook | null;
  storage: StorageConfig;
}

export function readConfig(env: Env): RestorePointRetentionConfig {
  const values = readOptions(options, env);
  let expiryHook: ExpiryHook | null = null;
  if (values.expiryHookUrl !== undefined) {
    const secret = signingSecret(env, options.expiryHookUrl.env);
    expiryHook = { url: values.expiryHookUrl, secret };
  }
  return {
    enabled: values.enabled,
    dryRun: values.dryRun,
    days: values.days,
    retentionMs: values.days * DAY_MS,
    settleMs: values.settleMs,
    expiryHook,
    storage: readPaperclipStorage(env),
  };
}

/** Limits from the spec. */
export const LIMITS = {
  /** Rows of work per batch; a full batch continues at once. */
  batch: 50,
  /** A `pending` row older than this was abandoned mid-capture. */
  captureGraceMs: HOUR_MS,
  /** A failed expiry hook or storage deletion is retried after this. */
  retryMs: 15 * MINUTE_MS,
  /** A batch whose due rows were all held by other transactions looks again after this. */
  lockedRetryMs: 5_000,
  /** One expiry hook call may take this long. */
  hookTimeoutMs: 10_000,
} as const;
