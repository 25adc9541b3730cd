/**
 * register -> `pending`, with the storage key to seal into (company-scoped, unique). The
 * capture-grace deadline is due at once: if the capture never activates it, the row is
 * abandoned once the grace ends.
 */
import { randomUUID } from "node:crypto";
import { StorageError, StorageKey, type StorageProvider } from "@reclaim/shared";
import type { Db, Prisma } from "../db";
import { LIMITS } from "../domains/restore-point-retention/config";
import { invalid } from "./refusals";
import { dueFor, ledgerResult, type LedgerResult } from "./view";
import type { RestorePointKind } from "./vocabulary";

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
  return ledgerResult(row, [
    dueFor(input.companyId, "capture_grace", new Date(now.getTime() + LIMITS.captureGraceMs)),
  ]);
}

function invalidReference(field: string, what: string, input: RegisterInput): never {
  const value = field === "sourceIssueId" ? input.sourceIssueId : input.executionWorkspaceId;
  throw invalid(field, `no ${what} ${value} in company ${input.companyId}`);
}
