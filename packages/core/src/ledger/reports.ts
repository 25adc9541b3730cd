/**
 * Batch reports (table reclaim_batch_reports): what one job checked, found and removed. The
 * same report is the job's return value, the body of the optional callback, and one
 * structured log line. Bytes are allocated bytes (st_blocks), not file sizes.
 */
import type { Db } from "../db";
import type { StatsCell } from "./report-stats";
import { companyIdOf, scopeOf, type Scope } from "./scope";

/**
 * How an entry ended. `skipped` means exactly "kept, because <reason>" (and counts in the
 * report's `skipped`); `noted` is neither kept nor removed by this batch: the entry vanished
 * before it was acted on, or a leftover was put back (`unconfirmed_copy_restored`). Noted
 * entries are listed with their reason but never counted as skips. `rolled_back` (issue 11,
 * additive): removal was prepared and undone because the entry changed under its locks; it
 * is kept, and counted among the skips with its reason like a `skipped` entry.
 */
export type EntryOutcome = "candidate" | "removed" | "kept" | "skipped" | "noted" | "failed" | "rolled_back";

/** One entry a check looked at: a folder, a cache version, a restore point... */
export interface ReportEntry {
  /** Path relative to the instance root, or a row id. */
  id: string;
  outcome: EntryOutcome;
  reason?: string;
  bytes?: number;
  companyId?: string | null;
}

export interface BatchReport {
  id: string;
  jobId: string;
  domain: string;
  companyId: string | null;
  dryRun: boolean;
  checked: number;
  candidates: number;
  removed: number;
  candidateBytes: number;
  reclaimedBytes: number;
  skipped: Record<string, number>;
  error: string | null;
  /** The batch stopped between entries because it was cancelled or the worker shut down. */
  cancelled: boolean;
  /** Requested sweeps: pass back as `cursor` to continue where this one stopped. */
  nextCursor: string | null;
  startedAt: string;
  finishedAt: string;
  entries?: ReportEntry[];
}

export interface NewReport {
  jobId: string;
  domain: string;
  scope: Scope;
  dryRun: boolean;
  checked: number;
  candidates: number;
  removed: number;
  candidateBytes: number;
  reclaimedBytes: number;
  skipped: Record<string, number>;
  entries: ReportEntry[];
  /**
   * Every entry the batch counted, by company, outcome and reason (BatchReporter's tally);
   * defaults to a tally of `entries`, which a large batch truncates.
   */
  stats?: StatsCell[];
  error: string | null;
  nextCursor: string | null;
  cancelled: boolean;
  startedAt: Date;
  finishedAt: Date;
}

type ReportRow = Awaited<ReturnType<Db["reclaimBatchReport"]["create"]>>;

export function toBatchReport(row: ReportRow, withEntries = false): BatchReport {
  const report: BatchReport = {
    id: row.id,
    jobId: row.jobId,
    domain: row.domain,
    companyId: companyIdOf(row.companyId),
    dryRun: row.dryRun,
    checked: row.checked,
    candidates: row.candidates,
    removed: row.removed,
    candidateBytes: Number(row.candidateBytes),
    reclaimedBytes: Number(row.reclaimedBytes),
    skipped: row.skipped as Record<string, number>,
    error: row.error,
    cancelled: row.cancelled,
    nextCursor: row.nextCursor,
    startedAt: row.startedAt.toISOString(),
    finishedAt: row.finishedAt.toISOString(),
  };
  if (withEntries) report.entries = row.entries as unknown as ReportEntry[];
  return report;
}

/** A report as stored (settle.ts): what the job returns, logs and calls back with. */
export function storedReport(id: string, report: NewReport): BatchReport {
  const { scope, startedAt, finishedAt, stats: _stats, ...fields } = report;
  return {
    id,
    ...fields,
    companyId: companyIdOf(scope),
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
  };
}

export interface ReportQuery {
  domain?: string;
  companyId?: string | null;
  limit: number;
}

export async function listReports(db: Db, query: ReportQuery): Promise<BatchReport[]> {
  const rows = await db.reclaimBatchReport.findMany({
    where: {
      ...(query.domain ? { domain: query.domain } : {}),
      ...(query.companyId !== undefined ? { companyId: scopeOf(query.companyId) } : {}),
    },
    orderBy: [{ finishedAt: "desc" }, { id: "desc" }],
    take: query.limit,
  });
  return rows.map((row) => toBatchReport(row));
}

export async function latestReportOfJob(db: Db, jobId: string): Promise<BatchReport | null> {
  const row = await db.reclaimBatchReport.findFirst({ where: { jobId }, orderBy: { finishedAt: "desc" } });
  return row ? toBatchReport(row, true) : null;
}
