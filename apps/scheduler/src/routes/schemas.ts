/** Response and shared request schemas: the contract the Paperclip server codes against. */
import { ERRORS, DOMAIN_IDS, storableString, type ErrorCode } from "@reclaim/core";
import { z } from "zod";

/** The catalog's codes that the API answers with (those with an HTTP status). */
const API_ERROR_CODES = Object.entries(ERRORS)
  .filter(([, entry]) => "status" in entry)
  .map(([code]) => code) as [ErrorCode, ...ErrorCode[]];

export const errorBody = z
  .object({
    error: z.enum(API_ERROR_CODES),
    message: z.string(),
    field: z.string().optional(),
  })
  .describe("Every error: a stable code, a message, and the request field at fault when there is one");

export const domainId = storableString({ min: 1, max: 100 }).describe(`One of: ${DOMAIN_IDS.join(", ")}`);

/** A company id, or `instance` for work that belongs to no company. */
export const scopeParam = z.union([z.uuid(), z.literal("instance")]);

export const reportEntry = z.object({
  id: z.string(),
  outcome: z.enum(["candidate", "removed", "kept", "skipped", "noted", "failed", "rolled_back"]),
  reason: z.string().optional(),
  bytes: z.number().optional(),
  companyId: z.string().nullable().optional(),
});

export const report = z.object({
  id: z.uuid(),
  domain: z.string(),
  companyId: z.uuid().nullable(),
  dryRun: z.boolean(),
  checked: z.number().int(),
  candidates: z.number().int(),
  removed: z.number().int(),
  candidateBytes: z.number().int(),
  reclaimedBytes: z.number().int(),
  skipped: z.record(z.string(), z.number().int()),
  error: z.string().nullable(),
  cancelled: z.boolean(),
  nextCursor: z.string().nullable(),
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime(),
  entries: z.array(reportEntry).optional(),
});

export const jobState = z.enum(["waiting", "delayed", "active", "completed", "failed"]);

export const deadline = z.object({
  domain: z.string(),
  companyId: z.uuid().nullable(),
  reason: z.string(),
  dueAt: z.iso.datetime(),
});
