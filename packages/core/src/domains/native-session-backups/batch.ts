/**
 * What the parts of a native session backup batch share (check.ts runs them; copies.ts,
 * leftovers.ts and evidence-expiry.ts are its parts): the phase results, the batch's shared
 * limits, report ids, and the two moves every part makes: rename an entry aside or report
 * why not, and delete a retired tree and report it.
 */
import { errnoCode } from "@reclaim/shared";
import { entryKind, removeRetired, retire, RetireRefused, type RetiredPrefix } from "../../fs";
import type { ReportEntry } from "../../ledger";
import type { JobContext } from "../types";
import {
  BACKUPS_DIR,
  CURRENT,
  LIMITS,
  SESSIONS_DIR,
  SWEEP_INTERVAL_MS,
  type NativeSessionBackupsConfig,
} from "./config";
import type { EvidenceEntry } from "./evidence";
import type { Liveness } from "./rules";
import type { SessionSurvey } from "./survey";

export type Ctx = JobContext<NativeSessionBackupsConfig>;

export interface Prepared {
  root: string;
  /** The session walk is due in this batch. */
  sessionsRan: boolean;
  liveness: Liveness;
  sessions: SessionSurvey[];
  sessionsMore: boolean;
  /** null when the evidence check is not due in this batch. */
  evidence: EvidenceEntry[] | null;
  evidenceMore: boolean;
  emptyArchiveDirs: string[];
}

export interface Deletion {
  rel: string;
  path: string;
  companyId?: string | null;
  reason?: string;
  /** Evidence (or its leftover): a failed removal makes the evidence check due at the next sweep. */
  evidence?: boolean;
  /** The `continuity-breaks` folder it was in (relative to the root), to remove once empty. */
  archiveDir?: string;
}

export interface Expiring {
  rel: string;
  retiring: string;
  companyId: string;
}

export interface Applied {
  root: string;
  expiring: Expiring[];
  deletions: Deletion[];
  archiveDirs: string[];
  clearedTaskSessions: number;
}

/** Moved or deleted since it was read: by another job, the executor, or the Paperclip server. */
export const isGone = (error: unknown) =>
  (error instanceof RetireRefused && error.reason === "missing") || errnoCode(error) === "ENOENT";

/**
 * Renames an entry aside; null, with a skip in the report, when it cannot be: gone since it
 * was read (`vanished`), or refused (`symlink`, `not_a_directory`). Never fails the batch
 * for one entry; any other failure (I/O) is the batch's.
 */
export async function retireOrSkip(
  ctx: Ctx,
  target: string,
  prefix: RetiredPrefix,
  id: string,
  extra: Partial<ReportEntry> = {},
): Promise<string | null> {
  try {
    return await retire(target, prefix);
  } catch (error) {
    if (isGone(error)) ctx.report.note(id, "vanished", extra);
    else if (error instanceof RetireRefused) ctx.report.skip(id, error.reason, extra);
    else throw error;
    return null;
  }
}

export const rel = (key: string) => `${SESSIONS_DIR}/${key}`;
export const copyRel = (session: string) => rel(`${session}/${BACKUPS_DIR}/${CURRENT}`);

/** Judged as apply will judge them, before any lock, to count only removable entries' bytes. */
export const evidenceJudge = (ctx: Ctx, liveness: Liveness) => ({
  now: ctx.startedAt,
  windowMs: ctx.config.evidenceWindowMs,
  liveness,
});

export const companyOf = (s: SessionSurvey) => (s.state.status === "ok" ? s.state.state.companyId : null);

/**
 * The batch's shared limits: 200 entries looked at (sessions, their leftovers, evidence
 * entries) and 50 removals (copies, leftovers, evidence).
 */
export class Batch {
  entriesLeft: number = LIMITS.entriesPerBatch;
  removalsLeft: number = LIMITS.removalsPerBatch;
  readonly applied: Applied;
  constructor(
    readonly ctx: Ctx,
    root: string,
  ) {
    this.applied = { root, expiring: [], deletions: [], archiveDirs: [], clearedTaskSessions: 0 };
  }

  get full(): boolean {
    return this.entriesLeft <= 0 || this.removalsLeft <= 0;
  }

  /** An entry is looked at: it counts toward `checked` and the 200. */
  examine(): void {
    this.entriesLeft -= 1;
    this.ctx.report.examined();
  }

  delete(item: Deletion): void {
    this.applied.deletions.push(item);
    this.removalsLeft -= 1;
  }
}

/**
 * Deletes a retired tree and reports it; true when it is gone. Already gone, or taken
 * mid-way by another job's leftover pass: `vanished` (that job reports it). A failure
 * leaves the retired name for a later batch: evidence at the next sweep, copies sooner.
 */
export async function remove(ctx: Ctx, item: Deletion): Promise<boolean> {
  const extra = {
    ...(item.companyId !== undefined ? { companyId: item.companyId } : {}),
    ...(item.reason ? { reason: item.reason } : {}),
  };
  let bytes: number | null;
  try {
    bytes = (await entryKind(item.path)) === "missing" ? null : await removeRetired(item.path);
  } catch (error) {
    if (!isGone(error)) {
      ctx.report.failed(item.rel, "delete_failed", extra);
      if (item.evidence) ctx.deadlines.at("evidence", ctx.later(SWEEP_INTERVAL_MS));
      else ctx.retryLater();
      return false;
    }
    bytes = null;
  }
  if (bytes === null) ctx.report.note(item.rel, "vanished", extra);
  else ctx.report.removedEntry(item.rel, bytes, extra);
  return true;
}
