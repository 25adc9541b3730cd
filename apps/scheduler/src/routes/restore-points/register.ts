/**
 * POST /v1/companies/:companyId/restore-points: register a restore point before sealing it.
 * Answers 201 with the `pending` row, whose `id` and `storageKey` the capture seals into.
 * A pending row never activated within one hour is treated as abandoned and deleted.
 */
import {
  boundedJson,
  Prisma,
  registerRestorePoint,
  RESTORE_POINT_KINDS,
  storableString,
} from "@reclaim/core";
import { z } from "zod";
import { errorBody } from "../schemas";
import { route } from "../route";
import { restorePointStorage, schedule } from "./access";
import { companyParams, restorePointBody } from "./schemas";

export const registerRestorePointRoute = route({
  method: "POST",
  url: "/v1/companies/:companyId/restore-points",
  operationId: "registerRestorePoint",
  summary: "Register a restore point (pending) and get the storage key to seal it into",
  params: companyParams,
  body: z.object({
    executionWorkspaceId: z.uuid(),
    sourceIssueId: z.uuid().describe("The issue whose tree decides the restore point's retention"),
    generation: z.number().int().min(0).max(2_147_483_647),
    kind: z.enum(RESTORE_POINT_KINDS),
    checkoutName: storableString({ min: 1, max: 200 }).nullable().optional().describe("nested_checkout only"),
    metadata: boundedJson().optional(),
  }),
  responses: { 201: restorePointBody, 400: errorBody, 501: errorBody },
  async handle({ params, body }, deps) {
    const { restorePoint, deadlines } = await registerRestorePoint(
      deps.db,
      restorePointStorage(deps),
      {
        companyId: params.companyId,
        ...body,
        metadata: body.metadata as Prisma.InputJsonValue | undefined,
      },
      deps.clock.now(),
    );
    await schedule(deps, deadlines);
    return { status: 201, body: { restorePoint } };
  },
});
