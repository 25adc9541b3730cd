/**
 * An error the REST API answers with: a catalog code that has an HTTP status (the catalog is
 * @reclaim/shared's `ERRORS`), the status, and the request field at fault.
 */
import { ERRORS, type ApiErrorCode as ErrorCode } from "@reclaim/shared";

export interface ReclaimErrorOptions {
  message?: string;
  /** The request field at fault, as a dotted path (`events.0.companyId`). */
  field?: string;
  cause?: unknown;
}

export class ReclaimError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly field: string | undefined;

  constructor(code: ErrorCode, options: ReclaimErrorOptions = {}) {
    super(options.message ?? ERRORS[code].message, { cause: options.cause });
    this.name = "ReclaimError";
    this.code = code;
    this.status = ERRORS[code].status;
    this.field = options.field;
  }

  /** The API's error body: `{error, message, field?}`. */
  toBody(): { error: ErrorCode; message: string; field?: string } {
    return this.field === undefined
      ? { error: this.code, message: this.message }
      : { error: this.code, message: this.message, field: this.field };
  }
}

export function isReclaimError(error: unknown, code?: ErrorCode): error is ReclaimError {
  return error instanceof ReclaimError && (code === undefined || error.code === code);
}
