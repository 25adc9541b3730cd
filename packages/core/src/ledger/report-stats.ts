/**
 * The rollup of report entries: per domain, company, hour (table reclaim_report_stats) or UTC
 * day (reclaim_report_stats_daily), dry run, outcome and reason, how many entries and how many
 * bytes. Every stored report's entries are added to both by the fold that takes its figures
 * (fold-reports.sql, so a report is in both or in neither), counted as the batch saw them (a
 * report row keeps at most MAX_REPORT_ENTRIES entries; the tally counts all), each to its
 * company's row and to the row of every company (ALL_COMPANIES), which instance-wide aggregates
 * read. The console and the `GET /v1/stats/*` routes fold, then read aggregates from it
 * (stats/queries.ts), each one query on an index: day rows for whole days, hourly rows for
 * hour buckets and partial days.
 */
import type { ReportEntry } from "./reports";

/** The company id of the rows summed over every company: neither a uuid nor `instance`. */
export const ALL_COMPANIES = "*";
/** How long rollup rows are kept: longer than the longest range a stats route answers. */
export const STATS_RETENTION_DAYS = 400;
/** Old rollup rows of each granularity a fold deletes at most per report it folds: far more than each adds. */
export const PRUNE_STATS_PER_REPORT = 200;

export interface StatsCell {
  /** The entry's company, or null to count it under the report's scope. */
  companyId: string | null;
  outcome: string;
  reason: string;
  entries: number;
  bytes: number;
}

/** Counts entries by (company, outcome, reason) as a batch records them. */
export class StatsTally {
  private readonly cells = new Map<string, StatsCell>();

  add(entry: ReportEntry): void {
    const companyId = entry.companyId ?? null;
    const reason = entry.reason ?? "";
    const key = `${companyId ?? ""}\u0000${entry.outcome}\u0000${reason}`;
    let cell = this.cells.get(key);
    if (!cell) {
      cell = { companyId, outcome: entry.outcome, reason, entries: 0, bytes: 0 };
      this.cells.set(key, cell);
    }
    cell.entries += 1;
    cell.bytes += entry.bytes ?? 0;
  }

  list(): StatsCell[] {
    return [...this.cells.values()];
  }

  static of(entries: readonly ReportEntry[]): StatsTally {
    const tally = new StatsTally();
    for (const entry of entries) tally.add(entry);
    return tally;
  }
}
