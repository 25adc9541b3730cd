/** A restore point as the API shows it, and what every ledger operation returns. */
import type { ExecutionWorkspaceRestorePointModel as Row } from "../db/generated/models/ExecutionWorkspaceRestorePoint";
import { DOMAIN } from "../domains/restore-point-retention/events";
import type { DeadlineRequest } from "../ledger";
import type { RestorePointKind, RestorePointStatus } from "./vocabulary";

/** A restore point as the API shows it. */
export interface RestorePointView {
  id: string;
  companyId: string;
  executionWorkspaceId: string;
  sourceIssueId: string;
  generation: number;
  kind: RestorePointKind;
  checkoutName: string | null;
  storageProvider: string;
  storageKey: string;
  sha256: string | null;
  byteSize: number | null;
  formatVersion: number | null;
  keyFingerprint: string | null;
  status: RestorePointStatus;
  deleteAfter: string | null;
  lastError: string | null;
  retryAt: string | null;
  activatedAt: string | null;
  deletedAt: string | null;
  metadata: unknown;
  createdAt: string;
  updatedAt: string;
}

/** The row as it is now, and the deadlines the operation made due (the caller schedules them). */
export interface LedgerResult {
  restorePoint: RestorePointView;
  deadlines: DeadlineRequest[];
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function viewOf(row: Row): RestorePointView {
  return {
    id: row.id,
    companyId: row.companyId,
    executionWorkspaceId: row.executionWorkspaceId,
    sourceIssueId: row.sourceIssueId,
    generation: row.generation,
    kind: row.kind as RestorePointKind,
    checkoutName: row.checkoutName,
    storageProvider: row.storageProvider,
    storageKey: row.storageKey,
    sha256: row.sha256,
    byteSize: row.byteSize === null ? null : Number(row.byteSize),
    formatVersion: row.formatVersion,
    keyFingerprint: row.keyFingerprint,
    status: row.status as RestorePointStatus,
    deleteAfter: iso(row.deleteAfter),
    lastError: row.lastError,
    retryAt: iso(row.retryAt),
    activatedAt: iso(row.activatedAt),
    deletedAt: iso(row.deletedAt),
    metadata: row.metadata ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export const ledgerResult = (row: Row, deadlines: DeadlineRequest[] = []): LedgerResult => ({
  restorePoint: viewOf(row),
  deadlines,
});

/** Work of the retention domain for `companyId`, due at `dueAt`. */
export const dueFor = (companyId: string, reason: string, dueAt: Date): DeadlineRequest => ({
  domain: DOMAIN,
  scope: companyId,
  reason,
  dueAt,
});
