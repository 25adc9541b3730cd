/**
 * What the parts of a native session backup batch share (check.ts runs them; copies.ts,
 * leftovers.ts and evidence-expiry.ts are its parts): the phase results, the batch's shared
 * limits, report ids, and the two moves every part makes: rename an entry aside or report
 * why not, and delete a retired tree and report it.
 */
import path from "node:path";
import { errnoCode } from "@reclaim/shared";
import { claimAndRemove, PathRefused, retire, type ProvenDir, type RetiredPrefix } from "../../fs";
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
  /** The sessions root as configured (report ids and retirement records are relative to it). */
  root: string;
  /** The session walk is due in this batch. */
  sessionsRan: boolean;
  liveness: Liveness;
  sessions: SessionSurvey[];
  sessionsMore: boolean;
  /** null when the evidence check is not due in this batch. */
  evidence: EvidenceEntry[] | null;
  evidenceMore: boolean;
  emptyArchiveDirs: ArchiveDir[];
  /** Evidence folders (`continuity-breaks`, `quarantine`) refused by the walk: reported, kept. */
  evidenceRefused: PathRefused[];
}

/** A session's `continuity-breaks` folder, to remove once empty. */
export interface ArchiveDir {
  /** Relative to the sessions root. */
  rel: string;
  /** The proven session directory it is in. */
  session: ProvenDir;
}

export interface Deletion {
  rel: string;
  /** The proven folder the retired tree is in, and its name there. */
  dir: ProvenDir;
  name: string;
  companyId?: string | null;
  reason?: string;
  /** Evidence (or its leftover): a failed removal makes the evidence check due at the next sweep. */
  evidence?: boolean;
  /** The `continuity-breaks` folder it was in, to remove once empty. */
  archiveDir?: ArchiveDir;
}

export interface Expiring {
  rel: string;
  /** The proven `failover-backups` and the copy's `.retiring-*` name there. */
  dir: ProvenDir;
  retiring: string;
  companyId: string;
}

export interface Applied {
  root: string;
  expiring: Expiring[];
  deletions: Deletion[];
  archiveDirs: ArchiveDir[];
  clearedTaskSessions: number;
}

/** Moved or deleted since it was read: by another job, the executor, or the Paperclip server. */
export const isGone = (error: unknown) =>
  (error instanceof PathRefused && error.reason === "missing") || errnoCode(error) === "ENOENT";

/** Reports a refused path (a link, not a directory, a folder swapped meanwhile) as kept, with its reason. */
export function reportRefused(
  ctx: Ctx,
  id: string,
  error: PathRefused,
  extra: Partial<ReportEntry> = {},
): void {
  ctx.report.skip(id, error.reason === "identity_changed" ? "path_changed" : error.reason, extra);
  if (error.reason === "path_changed" || error.reason === "identity_changed") ctx.retryLater();
}

/**
 * Renames the entry `name` of `dir` aside; its retired name, or null, with a skip in the
 * report, when it cannot be: gone since it was read (`vanished`), or refused (`symlink`,
 * `not_a_directory`, `path_changed`). Never fails the batch for one entry; any other failure
 * (I/O) is the batch's.
 */
export async function retireOrSkip(
  ctx: Ctx,
  dir: ProvenDir,
  name: string,
  prefix: RetiredPrefix,
  id: string,
  extra: Partial<ReportEntry> = {},
): Promise<string | null> {
  try {
    return await retire(dir, name, prefix);
  } catch (error) {
    if (isGone(error)) ctx.report.note(id, "vanished", extra);
    else if (error instanceof PathRefused) reportRefused(ctx, id, error, extra);
    else throw error;
    return null;
  }
}

export const rel = (key: string) => `${SESSIONS_DIR}/${key}`;
/** Report id of an absolute path below the sessions root. */
export const relOf = (root: string, at: string) => rel(path.relative(root, at));
export const copyRel = (session: string) => rel(`${session}/${BACKUPS_DIR}/${CURRENT}`);
/** What a kept session's report entry names: its copy, or the level refused above it. */
export const keptId = (root: string, session: SessionSurvey) =>
  session.refused ? relOf(root, session.refused.at) : copyRel(session.name);

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
 * Deletes a retired tree and reports it; true when it is gone. It is claimed first
 * (`claimAndRemove`): another job's leftover pass that meets it while it is deleted leaves it
 * alone. Already gone, or claimed first by another job's leftover pass: `vanished` (that job
 * reports it). A failure leaves the retired name for a later batch: evidence at the next
 * sweep, copies sooner.
 */
export async function remove(ctx: Ctx, item: Deletion): Promise<boolean> {
  const extra = {
    ...(item.companyId !== undefined ? { companyId: item.companyId } : {}),
    ...(item.reason ? { reason: item.reason } : {}),
  };
  let bytes: number | null;
  try {
    const removed = await claimAndRemove(item.dir, item.name, () =>
      ctx.faults.hit("native-session-backups.after-claim"),
    );
    bytes = removed?.bytes ?? null;
  } catch (error) {
    if (error instanceof PathRefused && !isGone(error)) {
      // A link carrying a retired name, or its folder swapped: never followed or removed.
      reportRefused(ctx, item.rel, error, item.companyId !== undefined ? { companyId: item.companyId } : {});
      return false;
    }
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
