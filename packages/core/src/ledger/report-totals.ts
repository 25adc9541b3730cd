/**
 * Running totals of every batch report, per domain (table reclaim_report_totals), and report
 * retention. A report row is added to the totals in the transaction that stores it, so
 * /metrics counters keep counting after old rows are pruned; each job prunes a few old
 * reports of its own domain at the same time (no periodic task).
 */
import type { Tx } from "../db";
import { sqlFile } from "../db/sql";
import type { NewReport } from "./reports";

/**
 * Upper bounds (seconds) of the batch duration histogram. The migration that created
 * reclaim_report_totals counted stored reports into these bounds: change them only with a
 * migration that recounts.
 */
export const REPORT_DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Old reports one job deletes at most: many more than the one row it adds. */
const PRUNE_PER_JOB = 20;

export async function addReportTotals(tx: Tx, report: NewReport): Promise<void> {
  await tx.$executeRawUnsafe(
    sqlFile(__dirname, "add-report-totals.sql"),
    report.domain,
    report.error === null ? 0 : 1,
    report.candidates,
    report.removed,
    report.candidateBytes,
    report.reclaimedBytes,
    (report.finishedAt.getTime() - report.startedAt.getTime()) / 1000,
    REPORT_DURATION_BUCKETS,
    JSON.stringify(report.skipped),
  );
}

export async function pruneReports(tx: Tx, domain: string, before: Date): Promise<void> {
  await tx.$executeRawUnsafe(sqlFile(__dirname, "prune-reports.sql"), domain, before, PRUNE_PER_JOB);
}
