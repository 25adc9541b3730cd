/**
 * POST /v1/companies/:companyId/restore-points/:id/activate: the sealed object is stored;
 * Reclaim reads it back in full and activates the row only if its SHA-256 and size, and its
 * sealed key header's format version and key fingerprint, match the body (422 naming the
 * field otherwise; 503 when storage cannot be read). Repeating a successful activation
 * answers 200 with the row.
 */
import { activateRestorePoint } from "@reclaim/core";
import { z } from "zod";
import { errorBody } from "../schemas";
import { route } from "../route";
import { restorePointStorage, schedule } from "./access";
import { restorePointBody, restorePointParams } from "./schemas";

export const activateRestorePointRoute = route({
  method: "POST",
  url: "/v1/companies/:companyId/restore-points/:id/activate",
  operationId: "activateRestorePoint",
  summary: "Activate a restore point after Reclaim verified its stored object",
  params: restorePointParams,
  body: z.object({
    sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, "must be 64 hex characters"),
    byteSize: z.number().int().min(0),
    formatVersion: z.number().int().min(1),
    keyFingerprint: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "must be the instance key's fingerprint: 64 lowercase hex characters"),
  }),
  responses: {
    200: restorePointBody,
    400: errorBody,
    404: errorBody,
    409: errorBody,
    422: errorBody,
    503: errorBody,
  },
  async handle({ params, body }, deps) {
    const { restorePoint, deadlines } = await activateRestorePoint(
      deps.db,
      restorePointStorage(deps),
      { companyId: params.companyId, id: params.id, ...body },
      () => deps.clock.now(),
    );
    await schedule(deps, deadlines);
    return { status: 200, body: { restorePoint } };
  },
});
