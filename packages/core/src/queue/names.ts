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

/** What a job id names: a deadline job's ledger key, or the domain of a requested sweep. */
export type ParsedJobId = ({ kind: "deadline" } & LedgerKey) | { kind: "sweep"; domain: string };

/** Parses `<domain>--<scope>` and `sweep--<domain>--<uuid>`; `null` for neither. */
export function parseJobId(jobId: string): ParsedJobId | null {
  if (jobId.startsWith(SWEEP_PREFIX)) {
    const rest = jobId.slice(SWEEP_PREFIX.length);
    const end = rest.indexOf("--");
    return { kind: "sweep", domain: end < 0 ? rest : rest.slice(0, end) };
  }
  const at = jobId.indexOf("--");
  return at <= 0 ? null : { kind: "deadline", domain: jobId.slice(0, at), scope: jobId.slice(at + 2) };
}

/** The ledger key of a deadline job id; `null` for any other job (a sweep). */
export function deadlineKeyOf(jobId: string): LedgerKey | null {
  const parsed = parseJobId(jobId);
  return parsed?.kind === "deadline" ? { domain: parsed.domain, scope: parsed.scope } : null;
}

const SWEEP_PREFIX = "sweep--";

/** A requested sweep has its own id (its scope travels in the job data). */
export function sweepJobId(key: LedgerKey): string {
  return `${SWEEP_PREFIX}${key.domain}--${randomUUID()}`;
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
