/**
 * The service's own environment (scheduler and worker). Domain controls live with each
 * domain (`domains/<id>/config.ts`) under the names the spec gives them.
 */
import { homedir } from "node:os";
import path from "node:path";
import { ConfigError } from "../errors";
import {
  integerOption,
  optionalStringOption,
  secretOption,
  readOptions,
  stringOption,
  urlValidator,
  type Env,
  type OptionValues,
} from "./option";

export const serviceOptions = {
  databaseUrl: stringOption(
    "DATABASE_URL",
    undefined,
    "PostgreSQL connection URL: Paperclip's database in production",
    urlValidator(["postgres:", "postgresql:"]),
  ),
  redisUrl: stringOption(
    "REDIS_URL",
    "redis://127.0.0.1:6379",
    "Redis connection URL for the BullMQ queues",
    urlValidator(["redis:", "rediss:"]),
  ),
  instanceRoot: stringOption(
    "PAPERCLIP_INSTANCE_ROOT",
    path.join(homedir(), ".paperclip", "instances", "default"),
    "The Paperclip instance directory whose disk Reclaim frees",
    (value) => (path.isAbsolute(value) ? undefined : `must be an absolute path (got "${value}")`),
    "~/.paperclip/instances/default",
  ),
  queuePrefix: stringOption("RECLAIM_QUEUE_PREFIX", "reclaim", "Redis key prefix of every queue", (value) =>
    /^[A-Za-z0-9_-]+$/.test(value)
      ? undefined
      : `may contain only letters, digits, '-' and '_' (got "${value}")`,
  ),
  jobLockMs: integerOption(
    "RECLAIM_JOB_LOCK_MS",
    30_000,
    "How long a worker's lock on an active job lasts without renewal; a killed worker's job is retried by another worker after this",
    { min: 1000, unit: "ms" },
  ),
  stalledIntervalMs: integerOption(
    "RECLAIM_STALLED_INTERVAL_MS",
    30_000,
    "How often workers look for jobs whose worker died",
    { min: 1000, unit: "ms" },
  ),
  jobAttempts: integerOption(
    "RECLAIM_JOB_ATTEMPTS",
    3,
    "Attempts for a job that fails with a retryable error before the domain's 15-minute retry deadline takes over",
    { min: 1, max: 20 },
  ),
  callbackUrl: optionalStringOption(
    "RECLAIM_CALLBACK_URL",
    "POST every batch report here (JSON), signed with RECLAIM_CALLBACK_SECRET",
    urlValidator(["http:", "https:"]),
  ),
  callbackSecret: secretOption(
    optionalStringOption(
      "RECLAIM_CALLBACK_SECRET",
      "HMAC-SHA256 key for the X-Reclaim-Signature header of report callbacks and restore-point expiry hooks; required with either URL, and never the API token",
    ),
  ),
  logLevel: stringOption("RECLAIM_LOG_LEVEL", "info", "debug, info, warn or error", (value) =>
    ["debug", "info", "warn", "error"].includes(value)
      ? undefined
      : `must be debug, info, warn or error (got "${value}")`,
  ),
};

export const schedulerOptions = {
  apiToken: secretOption(
    stringOption(
      "RECLAIM_API_TOKEN",
      undefined,
      "Bearer token (at least 16 characters, no whitespace) every API call, the dashboard and the console login must present (it also keys the console session cookie, so changing it ends every session); the scheduler refuses to start without it",
      (value) =>
        value.length < 16
          ? "must be at least 16 characters"
          : /\s/.test(value)
            ? "must not contain whitespace (a bearer header carries one value)"
            : undefined,
    ),
  ),
  port: integerOption("RECLAIM_PORT", 8080, "HTTP port of the scheduler", { min: 0, max: 65535 }),
  host: stringOption("RECLAIM_HOST", "0.0.0.0", "Address the scheduler listens on"),
  headersTimeoutMs: integerOption(
    "RECLAIM_HTTP_HEADERS_TIMEOUT_MS",
    10_000,
    "How long a client may take to send a request's headers before its connection is closed",
    { min: 100, unit: "ms" },
  ),
  requestTimeoutMs: integerOption(
    "RECLAIM_HTTP_REQUEST_TIMEOUT_MS",
    30_000,
    "How long a client may take to send a whole request (headers and body, at least the headers timeout) before it is answered 408 and closed",
    { min: 100, unit: "ms" },
  ),
  connectionTimeoutMs: integerOption(
    "RECLAIM_HTTP_CONNECTION_TIMEOUT_MS",
    600_000,
    "How long a connection may stay silent, also while its request is handled, before it is closed (0: no limit)",
    { min: 0, unit: "ms" },
  ),
};

export const workerOptions = {
  concurrency: integerOption(
    "RECLAIM_WORKER_CONCURRENCY",
    2,
    "Jobs one worker process runs at once per domain",
    {
      min: 1,
      max: 64,
    },
  ),
  reportRetentionDays: integerOption(
    "RECLAIM_REPORT_RETENTION_DAYS",
    30,
    "Days batch reports (GET /v1/reports) are kept; older ones are pruned as new ones are folded into the totals, while /metrics totals keep counting them",
    { min: 1, unit: "days" },
  ),
  shutdownTimeoutMs: integerOption(
    "RECLAIM_SHUTDOWN_TIMEOUT_MS",
    120_000,
    "On SIGTERM, how long the worker waits for active jobs before exiting anyway (they are then retried elsewhere)",
    { min: 0, unit: "ms" },
  ),
};

export type ServiceConfig = OptionValues<typeof serviceOptions>;
export type SchedulerConfig = OptionValues<typeof schedulerOptions>;
export type WorkerConfig = OptionValues<typeof workerOptions>;

export function readServiceConfig(env: Env = process.env): ServiceConfig {
  const values = readOptions(serviceOptions, env);
  if (values.callbackUrl !== undefined) signingSecret(env, serviceOptions.callbackUrl.env);
  return values;
}

/**
 * The HMAC key for a webhook configured by `urlVariable` (report callbacks, restore-point
 * expiry hooks). A receiver holds this key, so it must be one of its own: with the URL set,
 * RECLAIM_CALLBACK_SECRET is required and may not be the API token (a receiver holding that
 * could call the whole API).
 */
export function signingSecret(env: Env, urlVariable: string): string {
  const variable = serviceOptions.callbackSecret.env;
  const secret = serviceOptions.callbackSecret.read(env);
  if (secret === undefined)
    throw new ConfigError(variable, `is required when ${urlVariable} is set (it signs what is sent there)`);
  if (secret === env.RECLAIM_API_TOKEN?.trim())
    throw new ConfigError(variable, "must differ from RECLAIM_API_TOKEN: webhook receivers hold it");
  return secret;
}

export function readSchedulerConfig(env: Env = process.env): SchedulerConfig {
  const config = readOptions(schedulerOptions, env);
  if (config.requestTimeoutMs < config.headersTimeoutMs) {
    throw new ConfigError(
      "RECLAIM_HTTP_REQUEST_TIMEOUT_MS",
      `must be at least RECLAIM_HTTP_HEADERS_TIMEOUT_MS (${config.headersTimeoutMs}; got ${config.requestTimeoutMs})`,
    );
  }
  return config;
}

export function readWorkerConfig(env: Env = process.env): WorkerConfig {
  return readOptions(workerOptions, env);
}
