/**
 * POST /v1/sweeps: run a domain's check now, for one company or the instance. With
 * `dryRun` it is a diagnosis: the report lists every candidate and every skip with its
 * reason, bounded per batch; pass the report's `nextCursor` back as `cursor` to continue.
 */
import { decodeCursorToken, scopeOf, storableString } from "@reclaim/core";
import { z } from "zod";
import { enabledDomain } from "./guards";
import { domainId, errorBody } from "./schemas";
import { route } from "./route";

export const sweepsRoute = route({
  method: "POST",
  url: "/v1/sweeps",
  operationId: "requestSweep",
  summary: "Request a sweep (optionally a dry-run diagnosis) of one domain",
  body: z.object({
    domain: domainId,
    companyId: z.uuid().nullable().optional().describe("Omit or null for the instance scope"),
    dryRun: z.boolean().optional(),
    cursor: storableString({ min: 1, max: 4096 }).optional().describe("A previous report's nextCursor"),
  }),
  responses: {
    202: z.object({ jobId: z.string() }),
    400: errorBody,
    404: errorBody,
    409: errorBody,
    501: errorBody,
  },
  async handle({ body }, deps) {
    const { domain } = enabledDomain(deps, body.domain);
    decodeCursorToken(body.cursor); // 400 for a token we never issued, before queueing
    const jobId = await deps.queues.enqueueSweep(
      { domain: domain.id, scope: scopeOf(body.companyId) },
      body.dryRun === true,
      body.cursor,
    );
    return { status: 202, body: { jobId } };
  },
});
