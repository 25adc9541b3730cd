/**
 * What a check tells its report: each entry it looked at, and how it ended. Counting lives
 * here so every domain reports the same way.
 */
import { StatsTally, type ReportEntry } from "../ledger";

/** Report rows keep at most this many entries; counts stay exact beyond it. */
export const MAX_REPORT_ENTRIES = 2000;

export class BatchReporter {
  checked = 0;
  candidates = 0;
  removed = 0;
  candidateBytes = 0;
  reclaimedBytes = 0;
  readonly skipped: Record<string, number> = {};
  readonly entries: ReportEntry[] = [];
  entriesTruncated = false;
  /** Every entry by company, outcome and reason, also those past MAX_REPORT_ENTRIES. */
  readonly tally = new StatsTally();

  private push(entry: ReportEntry): void {
    this.tally.add(entry);
    if (this.entries.length < MAX_REPORT_ENTRIES) this.entries.push(entry);
    else this.entriesTruncated = true;
  }

  /** An entry was examined (counts toward `checked`). */
  examined(): void {
    this.checked += 1;
  }

  /** An entry is eligible for removal (or would be, in a dry run). */
  candidate(id: string, bytes: number, extra: Partial<ReportEntry> = {}): void {
    this.candidates += 1;
    this.candidateBytes += bytes;
    this.push({ id, outcome: "candidate", bytes, ...extra });
  }

  /** A candidate is gone; `bytes` are the allocated bytes actually freed. */
  removedEntry(id: string, bytes: number, extra: Partial<ReportEntry> = {}): void {
    this.removed += 1;
    this.reclaimedBytes += bytes;
    this.push({ id, outcome: "removed", bytes, ...extra });
  }

  /** An entry was kept, and why (a stable snake_case reason). */
  skip(id: string, reason: string, extra: Partial<ReportEntry> = {}): void {
    this.skipped[reason] = (this.skipped[reason] ?? 0) + 1;
    this.push({ id, outcome: "skipped", reason, ...extra });
  }

  /**
   * Neither kept nor removed by this batch, and why: it vanished before it was acted on
   * (`vanished`), or a leftover was put back (`unconfirmed_copy_restored`). Listed, never
   * counted among the skips.
   */
  note(id: string, reason: "vanished" | "unconfirmed_copy_restored", extra: Partial<ReportEntry> = {}): void {
    this.push({ id, outcome: "noted", reason, ...extra });
  }

  /**
   * Removal was prepared (a restore point saved) and undone because the entry changed under
   * its locks: kept, because `reason`, and counted among the skips like one.
   */
  rolledBack(id: string, reason: string, extra: Partial<ReportEntry> = {}): void {
    this.skipped[reason] = (this.skipped[reason] ?? 0) + 1;
    this.push({ id, outcome: "rolled_back", reason, ...extra });
  }

  /** Removal was attempted and failed; it is retried later. */
  failed(id: string, reason: string, extra: Partial<ReportEntry> = {}): void {
    this.skipped[reason] = (this.skipped[reason] ?? 0) + 1;
    this.push({ id, outcome: "failed", reason, ...extra });
  }
}
