/**
 * Reclaim's one error catalog: every failure any package reports has a stable `RECLAIM_ERR_*`
 * code, one message and a retry class; the codes the REST API answers with also carry their
 * HTTP status. Callers branch on `code` (or on the class), never on message text; the text
 * may change, the codes may not. It lives here, in the lowest package, so that core and the
 * apps import it rather than keep a second one.
 *
 * `permanent` tells a worker whether retrying can help. Permanent failures (a tampered or
 * truncated object, a wrong key, an invalid storage key, refused credentials, bad
 * configuration or input) stop retries, as BullMQ's `UnrecoverableError` does; the rest are
 * I/O and may succeed later.
 *
 * Two classes carry these codes: this package's `ReclaimError` (a mechanism failed: sealing,
 * storage, quarantine, configuration) and core's API error (`@reclaim/core` `ReclaimError`,
 * with the status and the request field at fault), which takes only the codes with a status.
 */

export const ERRORS = {
  // The REST API's answers (apps/scheduler; core's ReclaimError).
  RECLAIM_ERR_VALIDATION: { status: 400, permanent: true, message: "The request is invalid" },
  RECLAIM_ERR_UNAUTHORIZED: { status: 401, permanent: false, message: "A valid bearer token is required" },
  RECLAIM_ERR_NOT_FOUND: { status: 404, permanent: false, message: "No such route" },
  RECLAIM_ERR_UNKNOWN_DOMAIN: { status: 404, permanent: false, message: "No such retention domain" },
  RECLAIM_ERR_JOB_NOT_FOUND: { status: 404, permanent: false, message: "No such job" },
  RECLAIM_ERR_DOMAIN_DISABLED: { status: 409, permanent: false, message: "The retention domain is disabled" },
  RECLAIM_ERR_JOB_NOT_CANCELLABLE: { status: 409, permanent: false, message: "The job cannot be cancelled" },
  RECLAIM_ERR_BODY_TOO_LARGE: { status: 413, permanent: false, message: "The request body is too large" },
  RECLAIM_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    permanent: false,
    message: "The request body must be JSON",
  },
  RECLAIM_ERR_DOMAIN_NOT_IMPLEMENTED: {
    status: 501,
    permanent: false,
    message: "The retention domain is not implemented yet",
  },
  RECLAIM_ERR_DEPENDENCY_UNAVAILABLE: {
    status: 503,
    permanent: false,
    message: "A dependency (PostgreSQL or Redis) is unavailable",
  },
  // Restore-point ledger (packages/core/src/restore-points).
  RECLAIM_ERR_WORKSPACE_NOT_FOUND: {
    status: 404,
    permanent: true,
    message: "No such execution workspace in this company",
  },
  RECLAIM_ERR_RESTORE_POINT_NOT_FOUND: {
    status: 404,
    permanent: false,
    message: "No such restore point in this company",
  },
  RECLAIM_ERR_RESTORE_POINT_STATE: {
    status: 409,
    permanent: false,
    message: "The restore point's status does not allow this",
  },
  RECLAIM_ERR_RESTORE_POINT_UNVERIFIED: {
    status: 422,
    permanent: false,
    message: "The stored object does not match what the restore point declares",
  },
  RECLAIM_ERR_INTERNAL: { status: 500, permanent: false, message: "Internal error" },

  RECLAIM_ERR_CONFIG_INVALID: { status: 500, permanent: true, message: "Invalid configuration" },

  RECLAIM_ERR_INSTANCE_KEY_INVALID: { permanent: true, message: "Invalid instance secrets key" },
  RECLAIM_ERR_INSTANCE_KEY_IO: { permanent: false, message: "Cannot read or create the instance key file" },
  RECLAIM_ERR_RESTORE_POINTS_REFUSED: {
    permanent: true,
    message:
      "Restore points are refused with s3 storage unless the key comes from PAPERCLIP_SECRETS_MASTER_KEY",
  },

  RECLAIM_ERR_SEAL_UNKNOWN_VERSION: { permanent: true, message: "Sealed object has an unknown format" },
  RECLAIM_ERR_SEAL_WRONG_KEY: {
    permanent: true,
    message: "Sealed object was wrapped by a different instance key",
  },
  RECLAIM_ERR_SEAL_TAMPERED: { permanent: true, message: "Sealed object failed authentication" },
  RECLAIM_ERR_SEAL_TRUNCATED: { permanent: true, message: "Sealed object is truncated" },
  RECLAIM_ERR_SEAL_LENGTH_MISMATCH: {
    permanent: true,
    message: "Plaintext stream length differs from the declared length",
  },
  RECLAIM_ERR_SEAL_HASH_MISMATCH: {
    permanent: true,
    message: "Stored sealed bytes differ from the recorded SHA-256",
  },

  RECLAIM_ERR_STORAGE_KEY_INVALID: { permanent: true, message: "Invalid storage key" },
  RECLAIM_ERR_STORAGE_NOT_FOUND: { permanent: true, message: "Stored object not found" },
  RECLAIM_ERR_STORAGE_RANGE_INVALID: { permanent: true, message: "Invalid byte range" },
  RECLAIM_ERR_STORAGE_ACCESS_DENIED: { permanent: true, message: "Storage refused the credentials" },
  RECLAIM_ERR_STORAGE_LENGTH_MISMATCH: {
    permanent: true,
    message: "Upload stream length differs from the declared length",
  },
  RECLAIM_ERR_STORAGE_VERIFY_FAILED: {
    permanent: false,
    message: "Read-back of the uploaded object did not match what was sent",
  },
  RECLAIM_ERR_STORAGE_DELETE_UNCONFIRMED: {
    permanent: false,
    message: "Storage still reports the object after deleting it",
  },
  RECLAIM_ERR_STORAGE_UNAVAILABLE: { status: 503, permanent: false, message: "Storage is unavailable" },
  RECLAIM_ERR_STORAGE_IO: { permanent: false, message: "Storage I/O failed" },

  RECLAIM_ERR_QUARANTINE_NOT_A_REPOSITORY: { permanent: true, message: "Not a git repository" },
  RECLAIM_ERR_QUARANTINE_GIT_FAILED: { permanent: false, message: "A git command in the quarantine failed" },
  RECLAIM_ERR_QUARANTINE_ABORTED: { permanent: false, message: "Capture was aborted" },
  RECLAIM_ERR_QUARANTINE_TIMEOUT: { permanent: false, message: "Capture timed out" },
  RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED: {
    permanent: false,
    message: "Publishing quarantined objects into the repository failed",
  },
  RECLAIM_ERR_QUARANTINE_PACK_BUSY: {
    permanent: false,
    message: "Another live capture kept publishing the same pack for too long",
  },
  RECLAIM_ERR_QUARANTINE_REF_UPDATE_FAILED: {
    permanent: false,
    message: "Updating refs after publication failed",
  },
} as const satisfies Record<string, { status?: number; permanent: boolean; message: string }>;

export type ReclaimErrorCode = keyof typeof ERRORS;
/** The codes the REST API answers with: those with an HTTP status. */
export type ApiErrorCode = {
  [C in ReclaimErrorCode]: (typeof ERRORS)[C] extends { status: number } ? C : never;
}[ReclaimErrorCode];

type CodeWithPrefix<P extends string> = Extract<ReclaimErrorCode, `RECLAIM_ERR_${P}_${string}`>;
export type SealErrorCode = CodeWithPrefix<"SEAL" | "INSTANCE_KEY" | "RESTORE_POINTS">;
export type StorageErrorCode = CodeWithPrefix<"STORAGE">;
export type QuarantineErrorCode = CodeWithPrefix<"QUARANTINE">;

export class ReclaimError<C extends ReclaimErrorCode = ReclaimErrorCode> extends Error {
  readonly code: C;
  /** Retrying cannot help (see the catalog): a worker should fail the job for good. */
  readonly permanent: boolean;

  /**
   * `detail` says what was being done to what; it is appended to the catalog message, unless
   * `options.message` replaces the whole message.
   */
  constructor(code: C, detail?: string, options?: { cause?: unknown; message?: string }) {
    super(
      options?.message ?? (detail ? `${ERRORS[code].message}: ${detail}` : ERRORS[code].message),
      options && "cause" in options ? { cause: options.cause } : undefined,
    );
    this.code = code;
    this.permanent = ERRORS[code].permanent;
  }

  override get name(): string {
    return this.constructor.name;
  }
}

/**
 * A refused environment variable or option, the one ConfigError of every package: the message
 * is `<VARIABLE>: <problem>` (`RECLAIM_PORT: must be an integer (got "x")`), so a process that
 * refuses to start names what to fix.
 */
export class ConfigError extends ReclaimError<"RECLAIM_ERR_CONFIG_INVALID"> {
  /** The environment variable or option that was refused, exactly as the caller spells it. */
  readonly variable: string;

  constructor(variable: string, problem: string) {
    super("RECLAIM_ERR_CONFIG_INVALID", undefined, { message: `${variable}: ${problem}` });
    this.variable = variable;
  }
}

export class SealError extends ReclaimError<SealErrorCode> {}
export class StorageError extends ReclaimError<StorageErrorCode> {}
export class QuarantineError extends ReclaimError<QuarantineErrorCode> {}

/** True only for a ReclaimError whose code the catalog marks permanent; unknown errors are retryable. */
export function isPermanentError(error: unknown): boolean {
  return error instanceof ReclaimError && error.permanent;
}

/** The errno code of a Node system error (`ENOENT`, `ENOSPC`, ...), without casting at call sites. */
export function errnoCode(error: unknown): string | undefined {
  // Not `instanceof Error`: errors made by Node's internals can come from another realm
  // (Jest's test sandbox is one) and fail that check.
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/** A `.catch` handler that swallows the errno `codes` listed (`ENOENT`, ...) and rethrows the rest. */
export function ignoreErrno(...codes: string[]): (error: unknown) => void {
  return (error) => {
    if (!codes.includes(errnoCode(error) ?? "")) throw error;
  };
}
