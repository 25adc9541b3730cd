/**
 * Every error Reclaim reports, in one place: a stable code callers branch on, the HTTP
 * status the API answers with, and a default message. Codes never change meaning; add new
 * ones instead. Low-level causes (pg, ioredis, fs) are mapped to these in
 * `classify.ts`, nowhere else.
 */
export const ERRORS = {
  RECLAIM_ERR_VALIDATION: { status: 400, message: "The request is invalid" },
  RECLAIM_ERR_UNAUTHORIZED: { status: 401, message: "A valid bearer token is required" },
  RECLAIM_ERR_NOT_FOUND: { status: 404, message: "No such route" },
  RECLAIM_ERR_UNKNOWN_DOMAIN: { status: 404, message: "No such retention domain" },
  RECLAIM_ERR_JOB_NOT_FOUND: { status: 404, message: "No such job" },
  RECLAIM_ERR_DOMAIN_DISABLED: { status: 409, message: "The retention domain is disabled" },
  RECLAIM_ERR_JOB_NOT_CANCELLABLE: { status: 409, message: "The job cannot be cancelled" },
  RECLAIM_ERR_BODY_TOO_LARGE: { status: 413, message: "The request body is too large" },
  RECLAIM_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, message: "The request body must be JSON" },
  RECLAIM_ERR_DOMAIN_NOT_IMPLEMENTED: { status: 501, message: "The retention domain is not implemented yet" },
  RECLAIM_ERR_DEPENDENCY_UNAVAILABLE: {
    status: 503,
    message: "A dependency (PostgreSQL or Redis) is unavailable",
  },
  // Restore-point ledger (domains/restore-point-retention).
  RECLAIM_ERR_RESTORE_POINT_NOT_FOUND: { status: 404, message: "No such restore point in this company" },
  RECLAIM_ERR_RESTORE_POINT_STATE: { status: 409, message: "The restore point's status does not allow this" },
  RECLAIM_ERR_RESTORE_POINT_UNVERIFIED: {
    status: 422,
    message: "The stored object does not match what the restore point declares",
  },
  RECLAIM_ERR_STORAGE_UNAVAILABLE: { status: 503, message: "The file storage is unavailable" },
  RECLAIM_ERR_CONFIG: { status: 500, message: "The service configuration is invalid" },
  RECLAIM_ERR_INTERNAL: { status: 500, message: "Internal error" },
} as const;

export type ErrorCode = keyof typeof ERRORS;
