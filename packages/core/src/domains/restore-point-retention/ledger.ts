/**
 * The restore-point ledger as the Paperclip server uses it (through the scheduler API,
 * apps/scheduler/src/routes/restore-points/). Every operation is scoped to a company: a
 * restore point of another company does not exist for the caller (404).
 *
 * Lifecycle, from the caller's side:
 *   register     -> `pending`, with the storage key to seal into (company-scoped, unique)
 *   (the server seals and uploads the object to that key)
 *   activate     -> `active`, only after Reclaim read the stored object back and its SHA-256
 *                   and size, and its key header's format version and key fingerprint, match
 *                   what the caller declares; due for review at once, so a closed tree starts
 *                   its retention period
 *   supersede    -> `superseded` (a newer restore point replaced it); its object is deleted
 *   request deletion -> `delete_requested`; a `pending` one waits for the capture grace,
 *                   because its capture may still be writing the object
 * An `expiring` restore point can be neither superseded nor deleted by request: its expiry
 * hook runs first, then the worker deletes it. Repeating a call that already took effect
 * answers with the row as it is (safe retries).
 * Each operation returns the deadlines it makes due; the route records and schedules them.
 */
import { randomUUID } from "node:crypto";
import { StorageError, StorageKey, type StorageProvider } from "@reclaim/shared";
import type { Db, Prisma } from "../../db";
import type { ExecutionWorkspaceRestorePointModel as Row } from "../../db/generated/models/ExecutionWorkspaceRestorePoint";
import { ReclaimError } from "../../errors";
import type { DeadlineRequest } from "../../ledger";
import { LIMITS } from "./config";
import { DOMAIN } from "./events";
import type { RestorePointKind, RestorePointStatus } from "./rules";
import { readBack } from "./survey";

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

const result = (row: Row, deadlines: DeadlineRequest[] = []): LedgerResult => ({
  restorePoint: viewOf(row),
  deadlines,
});

const due = (companyId: string, reason: string, dueAt: Date): DeadlineRequest => ({
  domain: DOMAIN,
  scope: companyId,
  reason,
  dueAt,
});

function invalid(field: string, message: string): ReclaimError {
  return new ReclaimError("RECLAIM_ERR_VALIDATION", { message: `${field}: ${message}`, field });
}

function wrongState(row: Row, action: string): ReclaimError {
  return new ReclaimError("RECLAIM_ERR_RESTORE_POINT_STATE", {
    message: `restore point ${row.id} is ${row.status}: cannot ${action}`,
    field: "status",
  });
}

export async function findRestorePoint(db: Db, companyId: string, id: string): Promise<Row> {
  const row = await db.executionWorkspaceRestorePoint.findFirst({ where: { id, companyId } });
  if (!row) {
    throw new ReclaimError("RECLAIM_ERR_RESTORE_POINT_NOT_FOUND", {
      message: `id: no restore point ${id} in company ${companyId}`,
      field: "id",
    });
  }
  return row;
}

// ---------------------------------------------------------------------------------------
// register

export interface RegisterInput {
  companyId: string;
  executionWorkspaceId: string;
  sourceIssueId: string;
  generation: number;
  kind: RestorePointKind;
  /** The nested checkout's name (required for, and only for, `nested_checkout`). */
  checkoutName?: string | null;
  metadata?: Prisma.InputJsonValue;
}

/** `git-restore-points/<workspace>/<generation>/<kind>/<id>`, inside the company's namespace. */
function storageKeyFor(input: RegisterInput, id: string): string {
  const kindPath =
    input.kind === "worktree"
      ? "worktree"
      : input.kind === "task_directory"
        ? "task-directory"
        : `nested-checkouts/${input.checkoutName}`;
  try {
    return StorageKey.of(
      input.companyId,
      `git-restore-points/${input.executionWorkspaceId}/${input.generation}/${kindPath}/${id}`,
    ).path;
  } catch (error) {
    if (error instanceof StorageError) throw invalid("checkoutName", error.message);
    throw error;
  }
}

export async function registerRestorePoint(
  db: Db,
  storage: StorageProvider,
  input: RegisterInput,
  now: Date,
): Promise<LedgerResult> {
  const checkoutName = input.checkoutName ?? null;
  if (input.kind === "nested_checkout" && checkoutName === null) {
    throw invalid("checkoutName", "is required for a nested_checkout restore point");
  }
  if (input.kind !== "nested_checkout" && checkoutName !== null) {
    throw invalid("checkoutName", `is only for nested_checkout restore points (kind is ${input.kind})`);
  }
  const [workspace, issue] = await Promise.all([
    db.executionWorkspace.findFirst({
      where: { id: input.executionWorkspaceId, companyId: input.companyId },
      select: { id: true },
    }),
    db.issue.findFirst({
      where: { id: input.sourceIssueId, companyId: input.companyId },
      select: { id: true },
    }),
  ]);
  if (!workspace) invalidReference("executionWorkspaceId", "execution workspace", input);
  if (!issue) invalidReference("sourceIssueId", "issue", input);

  const id = randomUUID();
  const row = await db.executionWorkspaceRestorePoint.create({
    data: {
      id,
      companyId: input.companyId,
      executionWorkspaceId: input.executionWorkspaceId,
      sourceIssueId: input.sourceIssueId,
      generation: input.generation,
      kind: input.kind,
      checkoutName,
      storageProvider: storage.kind,
      storageKey: storageKeyFor(input, id),
      status: "pending",
      ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
      createdAt: now,
      updatedAt: now,
    },
  });
  // If the capture never activates it, the row is abandoned once the grace ends.
  return result(row, [
    due(input.companyId, "capture_grace", new Date(now.getTime() + LIMITS.captureGraceMs)),
  ]);
}

function invalidReference(field: string, what: string, input: RegisterInput): never {
  const value = field === "sourceIssueId" ? input.sourceIssueId : input.executionWorkspaceId;
  throw invalid(field, `no ${what} ${value} in company ${input.companyId}`);
}

// ---------------------------------------------------------------------------------------
// activate

export interface ActivateInput {
  companyId: string;
  id: string;
  /** What the sealing returned; each is checked here against the stored object and its key header. */
  sha256: string;
  byteSize: number;
  formatVersion: number;
  /** The instance key's fingerprint (64 lowercase hex), as the sealed key header names it. */
  keyFingerprint: string;
}

async function verifyStored(storage: StorageProvider, row: Row, input: ActivateInput): Promise<void> {
  if (row.storageProvider !== storage.kind) {
    throw new ReclaimError("RECLAIM_ERR_RESTORE_POINT_STATE", {
      message: `restore point ${row.id} was registered with ${row.storageProvider} storage, but storage is configured as ${storage.kind}`,
      field: "storageProvider",
    });
  }
  let facts;
  try {
    facts = await readBack(storage, row.storageKey);
  } catch (error) {
    if (error instanceof StorageError) {
      throw new ReclaimError("RECLAIM_ERR_STORAGE_UNAVAILABLE", { message: error.message, cause: error });
    }
    throw error;
  }
  const unverified = (field: string, message: string) =>
    new ReclaimError("RECLAIM_ERR_RESTORE_POINT_UNVERIFIED", { message: `${field}: ${message}`, field });
  const header = facts.header;
  if (!facts.found) throw unverified("storageKey", `no object is stored at ${row.storageKey}`);
  if (header.state === "absent")
    throw unverified("storageKey", `the sealed key header of ${row.storageKey} is missing`);
  if (facts.byteSize !== input.byteSize) {
    throw unverified("byteSize", `the stored object has ${facts.byteSize} bytes, not ${input.byteSize}`);
  }
  if (facts.sha256 !== input.sha256.toLowerCase()) {
    throw unverified("sha256", `the stored object hashes to ${facts.sha256}`);
  }
  if (header.state === "unreadable") {
    throw unverified("storageKey", `the sealed key header of ${row.storageKey} is not one: ${header.reason}`);
  }
  if (header.formatVersion !== input.formatVersion) {
    throw unverified("formatVersion", `the sealed key header has format version ${header.formatVersion}`);
  }
  if (header.keyFingerprint === null) {
    throw unverified("formatVersion", `format version ${header.formatVersion} is one this build cannot read`);
  }
  if (header.keyFingerprint !== input.keyFingerprint) {
    throw unverified("keyFingerprint", `the sealed key header was wrapped by key ${header.keyFingerprint}`);
  }
}

/** The activation already recorded: same payload, same header facts. */
const sameObject = (row: Row, input: ActivateInput) =>
  row.sha256 === input.sha256.toLowerCase() &&
  row.byteSize === BigInt(input.byteSize) &&
  row.formatVersion === input.formatVersion &&
  row.keyFingerprint === input.keyFingerprint;

export async function activateRestorePoint(
  db: Db,
  storage: StorageProvider,
  input: ActivateInput,
  now: () => Date,
): Promise<LedgerResult> {
  const row = await findRestorePoint(db, input.companyId, input.id);
  if (row.status === "active" && sameObject(row, input)) return result(row);
  if (row.status !== "pending") throw wrongState(row, "activate");
  // Outside any transaction: this streams the whole object back from storage.
  await verifyStored(storage, row, input);
  const at = now();
  const changed = await db.executionWorkspaceRestorePoint.updateMany({
    where: { id: row.id, companyId: input.companyId, status: "pending" },
    data: {
      status: "active",
      sha256: input.sha256.toLowerCase(),
      byteSize: BigInt(input.byteSize),
      formatVersion: input.formatVersion,
      keyFingerprint: input.keyFingerprint,
      activatedAt: at,
      // Due for review now: a tree that is already closed starts its retention period.
      deleteAfter: at,
      lastError: null,
      retryAt: null,
      updatedAt: at,
    },
  });
  const current = await findRestorePoint(db, input.companyId, input.id);
  // Changed meanwhile (its issue or company was deleted, or a second activation won).
  if (changed.count === 0 && !(current.status === "active" && sameObject(current, input))) {
    throw wrongState(current, "activate");
  }
  return result(current, changed.count === 0 ? [] : [due(input.companyId, "activated", at)]);
}

// ---------------------------------------------------------------------------------------
// supersede, request deletion

const GOING: RestorePointStatus[] = ["superseded", "delete_requested", "deleted"];

export async function supersedeRestorePoint(
  db: Db,
  companyId: string,
  id: string,
  now: Date,
): Promise<LedgerResult> {
  const row = await findRestorePoint(db, companyId, id);
  if (GOING.includes(row.status as RestorePointStatus)) return result(row);
  if (row.status !== "active") throw wrongState(row, "supersede");
  const changed = await db.executionWorkspaceRestorePoint.updateMany({
    where: { id, companyId, status: "active" },
    data: { status: "superseded", deleteAfter: null, retryAt: null, lastError: null, updatedAt: now },
  });
  const current = await findRestorePoint(db, companyId, id);
  if (changed.count === 0) {
    if (GOING.includes(current.status as RestorePointStatus)) return result(current);
    throw wrongState(current, "supersede");
  }
  return result(current, [due(companyId, "superseded", now)]);
}

export async function requestRestorePointDeletion(
  db: Db,
  companyId: string,
  id: string,
  now: Date,
): Promise<LedgerResult> {
  const row = await findRestorePoint(db, companyId, id);
  if (row.status === "delete_requested" || row.status === "deleted") return result(row);
  if (!["pending", "active", "superseded"].includes(row.status)) throw wrongState(row, "request deletion");
  // A pending capture may still be writing its object: delete once its grace has ended.
  const graceEnd = new Date(row.createdAt.getTime() + LIMITS.captureGraceMs);
  const retryAt = row.status === "pending" && graceEnd > now ? graceEnd : null;
  const changed = await db.executionWorkspaceRestorePoint.updateMany({
    where: { id, companyId, status: row.status },
    data: { status: "delete_requested", deleteAfter: null, retryAt, lastError: null, updatedAt: now },
  });
  const current = await findRestorePoint(db, companyId, id);
  if (changed.count === 0) {
    if (current.status === "delete_requested" || current.status === "deleted") return result(current);
    throw wrongState(current, "request deletion");
  }
  return result(current, [due(companyId, "delete_requested", retryAt ?? now)]);
}

// ---------------------------------------------------------------------------------------
// list

export interface ListInput {
  companyId: string;
  executionWorkspaceId: string;
  statuses?: RestorePointStatus[];
  limit: number;
  /** A previous answer's `nextCursor`. */
  cursor?: string;
}

interface Cursor {
  createdAt: string;
  id: string;
}

function decodeCursor(token: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as Partial<Cursor>;
    if (
      typeof value.createdAt === "string" &&
      typeof value.id === "string" &&
      !Number.isNaN(Date.parse(value.createdAt))
    ) {
      return { createdAt: value.createdAt, id: value.id };
    }
  } catch {
    // falls through to the 400 below
  }
  throw invalid("cursor", "is not a cursor this API returned");
}

/** Newest first; `nextCursor` is set when more rows follow. */
export async function listRestorePoints(
  db: Db,
  input: ListInput,
): Promise<{ restorePoints: RestorePointView[]; nextCursor: string | null }> {
  const after = input.cursor === undefined ? null : decodeCursor(input.cursor);
  const rows = await db.executionWorkspaceRestorePoint.findMany({
    where: {
      companyId: input.companyId,
      executionWorkspaceId: input.executionWorkspaceId,
      ...(input.statuses ? { status: { in: input.statuses } } : {}),
      ...(after
        ? {
            OR: [
              { createdAt: { lt: new Date(after.createdAt) } },
              { createdAt: new Date(after.createdAt), id: { lt: after.id } },
            ],
          }
        : {}),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: input.limit + 1,
  });
  const page = rows.slice(0, input.limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > input.limit && last
      ? Buffer.from(JSON.stringify({ createdAt: last.createdAt.toISOString(), id: last.id })).toString(
          "base64url",
        )
      : null;
  return { restorePoints: page.map(viewOf), nextCursor };
}
