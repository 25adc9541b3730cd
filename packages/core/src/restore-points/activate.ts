/**
 * activate -> `active`, only after Reclaim read the stored object back and its SHA-256 and
 * size, and its key header's format version and key fingerprint, match what the caller
 * declares; due for review at once, so a closed tree starts its retention period. Repeating
 * an activation that took effect answers with the row as it is.
 */
import type { StorageProvider } from "@reclaim/shared";
import { StorageError } from "@reclaim/shared";
import type { Db, Prisma, Tx } from "../db";
import type { ExecutionWorkspaceRestorePointModel as Row } from "../db/generated/models/ExecutionWorkspaceRestorePoint";
import { ReclaimError } from "../errors";
import { findRestorePoint } from "./find";
import { readBack } from "./read-back";
import { wrongState } from "./refusals";
import { dueFor, ledgerResult, type LedgerResult } from "./view";

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

/**
 * Reads the stored object back in full and checks every fact the caller declares (hash,
 * size, the key header's format version and key fingerprint). Outside any transaction.
 */
export async function verifyStored(
  storage: StorageProvider,
  row: Pick<Row, "id" | "storageProvider" | "storageKey">,
  input: Omit<ActivateInput, "companyId" | "id">,
): Promise<void> {
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

/**
 * The activation itself, for a caller that already read the object back (`readBack`) and
 * checked it: `pending` -> `active` in `db`, which may be the transaction that also archives
 * the workspace. Returns how many rows changed (0: not pending any more). The caller requests
 * the `activated` review deadline (`dueFor`).
 */
export async function recordActivation(
  db: Db | Tx,
  input: ActivateInput,
  at: Date,
  /** Replaces the row's metadata (a domain keeps its manifest there). */
  metadata?: Prisma.InputJsonValue,
): Promise<{ count: number }> {
  return db.executionWorkspaceRestorePoint.updateMany({
    where: { id: input.id, companyId: input.companyId, status: "pending" },
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
      ...(metadata === undefined ? {} : { metadata }),
    },
  });
}

export async function activateRestorePoint(
  db: Db,
  storage: StorageProvider,
  input: ActivateInput,
  now: () => Date,
): Promise<LedgerResult> {
  const row = await findRestorePoint(db, input.companyId, input.id);
  if (row.status === "active" && sameObject(row, input)) return ledgerResult(row);
  if (row.status !== "pending") throw wrongState(row, "activate");
  // Outside any transaction: this streams the whole object back from storage.
  await verifyStored(storage, row, input);
  const at = now();
  const changed = await recordActivation(db, input, at);
  const current = await findRestorePoint(db, input.companyId, input.id);
  // Changed meanwhile (its issue or company was deleted, or a second activation won).
  if (changed.count === 0 && !(current.status === "active" && sameObject(current, input))) {
    throw wrongState(current, "activate");
  }
  return ledgerResult(current, changed.count === 0 ? [] : [dueFor(input.companyId, "activated", at)]);
}
