/**
 * Running totals of every batch report, per domain (table reclaim_report_totals), and report
 * retention. A stored report's figures are added to the totals by a fold (fold-reports.sql,
 * settle.ts), so /metrics counters keep counting after old rows are pruned; each fold prunes a
 * few old reports of its domains per report it folds (no periodic task). A domain's totals are
 * kept in up to REPORT_TOTAL_SHARDS rows, so the folds of several processes do not wait for
 * one another's commits on a single row; `readReportTotals` folds, then adds them up.
 */
import { poolOf, runStatement, statement, type Db } from "../db";
import { foldReports } from "./settle";

/**
 * Upper bounds (seconds) of the batch duration histogram. The migration that created
 * reclaim_report_totals counted stored reports into these bounds: change them only with a
 * migration that recounts.
 */
export const REPORT_DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Old reports a fold deletes at most per report it folds: many more than the one row each adds. */
export const PRUNE_PER_JOB = 20;

/** Rows a domain's running totals are spread over (fold-reports.sql). */
export const REPORT_TOTAL_SHARDS = 16;

export interface ReportTotals {
  domain: string;
  batches: bigint;
  errors: bigint;
  candidates: bigint;
  removed: bigint;
  candidateBytes: bigint;
  reclaimedBytes: bigint;
  durationSum: number;
  /** Batches that took at most each bound of REPORT_DURATION_BUCKETS, in order. */
  durationBuckets: bigint[];
  skipped: Record<string, number>;
}

const READ_TOTALS = statement(__dirname, "read-totals.sql");

/** Every domain's running totals, every stored report folded in and its shards added up, by domain. */
export async function readReportTotals(db: Db): Promise<ReportTotals[]> {
  await foldReports(db);
  const rows = await runStatement<{
    domain: string;
    batches: string;
    errors: string;
    candidates: string;
    removed: string;
    candidate_bytes: string;
    reclaimed_bytes: string;
    duration_sum: number;
    duration_buckets: string[];
    skipped: Record<string, string>;
  }>(poolOf(db), READ_TOTALS, []);
  return rows.map((r) => ({
    domain: r.domain,
    batches: BigInt(r.batches),
    errors: BigInt(r.errors),
    candidates: BigInt(r.candidates),
    removed: BigInt(r.removed),
    candidateBytes: BigInt(r.candidate_bytes),
    reclaimedBytes: BigInt(r.reclaimed_bytes),
    durationSum: r.duration_sum,
    durationBuckets: r.duration_buckets.map(BigInt),
    skipped: Object.fromEntries(Object.entries(r.skipped).map(([k, v]) => [k, Number(v)])),
  }));
}
