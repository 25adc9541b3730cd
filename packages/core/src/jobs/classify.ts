/**
 * Failure classes for a batch. Retryable failures (I/O, a database or Redis that went away)
 * go back to BullMQ, which retries with backoff; a permanent one, or the last attempt, is
 * recorded in the report and the domain tries again at its failure-retry deadline.
 * Low-level error codes are interpreted here and nowhere else.
 */
import { isPermanentError } from "@reclaim/shared";
import { UnrecoverableError } from "bullmq";
import { ERRORS, isReclaimError, PermanentError } from "../errors";

export function isPermanent(error: unknown): boolean {
  if (error instanceof UnrecoverableError || error instanceof PermanentError) return true;
  // Every catalog code says whether a retry can help (API, sealing, storage, quarantine, config).
  if (isReclaimError(error)) return ERRORS[error.code].permanent;
  return isPermanentError(error);
}

export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
