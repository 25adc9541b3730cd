/**
 * Queue and job naming. One BullMQ queue per domain. A deadline job's id is derived from its
 * domain and scope only, so BullMQ itself refuses a second pending job for the same pair;
 * BullMQ ids must not contain ':' (its key separator), so the parts are joined with "--".
 */
import { randomUUID } from "node:crypto";
import type { LedgerKey } from "../ledger";

export function queueName(domain: string): string {
  return `reclaim-${domain}`;
}

export function deadlineJobId(key: LedgerKey): string {
  return `${key.domain}--${key.scope}`;
}

/** The ledger key of a deadline job id; `null` for any other job (a sweep). */
export function deadlineKeyOf(jobId: string): LedgerKey | null {
  if (jobId.startsWith("sweep--")) return null;
  const at = jobId.indexOf("--");
  return at <= 0 ? null : { domain: jobId.slice(0, at), scope: jobId.slice(at + 2) };
}

/** A requested sweep has its own id (its scope travels in the job data). */
export function sweepJobId(key: LedgerKey): string {
  return `sweep--${key.domain}--${randomUUID()}`;
}

export type JobKind = "deadline" | "sweep";

export interface ReclaimJobData {
  kind: JobKind;
  domain: string;
  scope: string;
  /** Deadline jobs: the ledger due time this job was (re)scheduled for, ISO. */
  dueAt?: string;
  /** Sweeps: report only, change nothing. */
  dryRun?: boolean;
  /** Sweeps: continue a previous sweep from its report's `nextCursor`. */
  cursor?: string;
}
