/**
 * The package's error catalog: every failure the shared mechanisms report has a stable
 * `RECLAIM_ERR_*` code, one message and a retry class. Callers branch on `code` (or on the
 * class), never on message text; the text may change, the codes may not.
 *
 * `permanent` tells a worker whether retrying can help. Permanent failures (a tampered or
 * truncated object, a wrong key, an invalid storage key, refused credentials) stop retries,
 * as BullMQ's `UnrecoverableError` does; the rest are I/O and may succeed later.
 */

const CATALOG = {
  RECLAIM_ERR_CONFIG_INVALID: { permanent: true, message: "Invalid configuration" },

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
  RECLAIM_ERR_STORAGE_UNAVAILABLE: { permanent: false, message: "Storage is unavailable" },
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
} as const satisfies Record<string, { permanent: boolean; message: string }>;

export type ReclaimErrorCode = keyof typeof CATALOG;

type CodeWithPrefix<P extends string> = Extract<ReclaimErrorCode, `RECLAIM_ERR_${P}_${string}`>;
export type SealErrorCode = CodeWithPrefix<"SEAL" | "INSTANCE_KEY" | "RESTORE_POINTS">;
export type StorageErrorCode = CodeWithPrefix<"STORAGE">;
export type QuarantineErrorCode = CodeWithPrefix<"QUARANTINE">;

export class ReclaimError<C extends ReclaimErrorCode = ReclaimErrorCode> extends Error {
  readonly code: C;
  /** Retrying cannot help (see the catalog): a worker should fail the job for good. */
  readonly permanent: boolean;

  /** `detail` says what was being done to what; it is appended to the catalog message. */
  constructor(code: C, detail?: string, options?: { cause?: unknown }) {
    super(detail ? `${CATALOG[code].message}: ${detail}` : CATALOG[code].message, options);
    this.code = code;
    this.permanent = CATALOG[code].permanent;
  }

  override get name(): string {
    return this.constructor.name;
  }
}

export class ConfigError extends ReclaimError<"RECLAIM_ERR_CONFIG_INVALID"> {
  /** The environment variable or option that was refused, exactly as the caller spells it. */
  readonly variable: string;

  constructor(variable: string, problem: string) {
    super("RECLAIM_ERR_CONFIG_INVALID", `${variable} ${problem}`);
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
