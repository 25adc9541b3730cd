/** Request and response shapes of the restore-point routes (the Paperclip server's contract). */
import { RESTORE_POINT_KINDS, RESTORE_POINT_STATUSES } from "@reclaim/core";
import { z } from "zod";

export const companyParams = z.object({ companyId: z.uuid() });
export const restorePointParams = z.object({ companyId: z.uuid(), id: z.uuid() });
export const workspaceParams = z.object({ companyId: z.uuid(), workspaceId: z.uuid() });

const timestamp = z.iso.datetime().nullable();

export const restorePoint = z
  .object({
    id: z.uuid(),
    companyId: z.uuid(),
    executionWorkspaceId: z.uuid(),
    sourceIssueId: z.uuid(),
    generation: z.number().int(),
    kind: z.enum(RESTORE_POINT_KINDS),
    checkoutName: z.string().nullable(),
    storageProvider: z.string().describe("local_disk or s3, as configured when it was registered"),
    storageKey: z.string().describe("Where to seal the object: companies/<companyId>/git-restore-points/..."),
    sha256: z.string().nullable(),
    byteSize: z.number().int().nullable(),
    formatVersion: z.number().int().nullable(),
    keyFingerprint: z.string().nullable(),
    status: z.enum(RESTORE_POINT_STATUSES),
    deleteAfter: timestamp.describe("Active: its expiry time, or null while its issue tree is open"),
    lastError: z.string().nullable(),
    retryAt: timestamp,
    activatedAt: timestamp,
    deletedAt: timestamp,
    metadata: z.unknown(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .describe("A restore point of the ledger execution_workspace_restore_points");

export const restorePointBody = z.object({ restorePoint });
