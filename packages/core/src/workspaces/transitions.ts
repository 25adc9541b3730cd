/**
 * Archiving and reactivating an execution workspace row as Paperclip's server does (its
 * terminal reaper and its reopen), so both sides read the same lifecycle: every transition
 * raises the lifecycle generation. Each must run holding the workspace lifecycle lock
 * (locks.ts); each returns the row's new metadata, or null when the row was not in a state
 * that allows it (changed meanwhile).
 */
import type { Tx } from "../db";
import { sqlFile } from "../db/sql";
import { workspaceRows } from "./facts";
import { lifecycleGeneration, type WorkspaceMetadata } from "./vocabulary";

/** The generation the next transition writes: the row's, read under the lifecycle lock, plus one. */
async function nextGeneration(tx: Tx, companyId: string, workspaceId: string): Promise<number> {
  const row = (await workspaceRows(tx, companyId, [workspaceId])).get(workspaceId);
  return lifecycleGeneration(row?.metadata) + 1;
}

interface Changed {
  id: string;
  metadata: WorkspaceMetadata;
}

export async function archiveWorkspace(
  tx: Tx,
  input: {
    companyId: string;
    workspaceId: string;
    now: Date;
    cleanupReason: string;
    metadata: WorkspaceMetadata;
  },
): Promise<WorkspaceMetadata | null> {
  const [row] = await tx.$queryRawUnsafe<Changed[]>(
    sqlFile(__dirname, "archive.sql"),
    input.workspaceId,
    input.companyId,
    input.now,
    input.cleanupReason,
    JSON.stringify(input.metadata),
    await nextGeneration(tx, input.companyId, input.workspaceId),
  );
  return row?.metadata ?? null;
}

export async function reactivateWorkspace(
  tx: Tx,
  input: {
    companyId: string;
    workspaceId: string;
    now: Date;
    metadata?: WorkspaceMetadata;
    removeKeys?: string[];
    /** Set Paperclip's reopen-pending flag (a reopen for a run or comment), not for a rollback. */
    reopenPending: boolean;
  },
): Promise<WorkspaceMetadata | null> {
  const [row] = await tx.$queryRawUnsafe<Changed[]>(
    sqlFile(__dirname, "reactivate.sql"),
    input.workspaceId,
    input.companyId,
    input.now,
    JSON.stringify(input.metadata ?? {}),
    JSON.stringify(input.removeKeys ?? []),
    input.reopenPending ? input.now.toISOString() : null,
    await nextGeneration(tx, input.companyId, input.workspaceId),
  );
  return row?.metadata ?? null;
}

/** Merges keys into a workspace's metadata whatever its status (recording a protocol's progress). */
export async function mergeWorkspaceMetadata(
  tx: Tx,
  input: { companyId: string; workspaceId: string; now: Date; metadata: WorkspaceMetadata },
): Promise<WorkspaceMetadata | null> {
  const [row] = await tx.$queryRawUnsafe<Changed[]>(
    sqlFile(__dirname, "update-metadata.sql"),
    input.workspaceId,
    input.companyId,
    input.now,
    JSON.stringify(input.metadata),
  );
  return row?.metadata ?? null;
}
