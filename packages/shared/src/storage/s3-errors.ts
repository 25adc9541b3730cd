import { errnoCode, ReclaimError, StorageError } from "../errors";

// S3 error codes that mean "these credentials are refused": retrying with them cannot help.
const DENIED = new Set([
  "AccessDenied",
  "SignatureDoesNotMatch",
  "InvalidAccessKeyId",
  "InvalidToken",
  "ExpiredToken",
  "InvalidSecurity",
]);
const MISSING = new Set(["NoSuchKey", "NotFound", "NoSuchBucket"]);

/** The one place where minio client and socket errors become StorageErrors. */
export function s3StorageError(what: string, error: unknown): ReclaimError {
  if (error instanceof ReclaimError) return error;
  const code = s3Code(error);
  if (code && DENIED.has(code)) {
    return new StorageError("RECLAIM_ERR_STORAGE_ACCESS_DENIED", `${what}: ${code}`, { cause: error });
  }
  if (code && MISSING.has(code)) {
    return new StorageError("RECLAIM_ERR_STORAGE_NOT_FOUND", `${what}: ${code}`, { cause: error });
  }
  if (code === "InvalidRange") {
    return new StorageError("RECLAIM_ERR_STORAGE_RANGE_INVALID", `${what}: ${code}`, { cause: error });
  }
  // Refused or reset connections, DNS failures, timeouts, 5xx and anything unrecognised:
  // the server may answer later, so these stay retryable.
  return new StorageError("RECLAIM_ERR_STORAGE_UNAVAILABLE", `${what}: ${code ?? String(error)}`, {
    cause: error,
  });
}

export function isS3NotFound(error: unknown): boolean {
  const code = s3Code(error);
  return code === "NoSuchKey" || code === "NotFound";
}

function s3Code(error: unknown): string | undefined {
  const code = errnoCode(error);
  if (code) return code;
  if (error instanceof AggregateError) return error.errors.map(errnoCode).find(Boolean);
  return undefined;
}
