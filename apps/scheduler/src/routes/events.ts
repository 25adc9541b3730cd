/**
 * POST /v1/events: changes from the Paperclip server. Each event goes to every enabled
 * domain that subscribes to its type; what they make due is recorded in the ledger and
 * scheduled. The whole batch is validated before anything is recorded.
 */
import {
  eventsBodySchema,
  type DeadlineRequest,
  type DomainId,
  type EventContext,
  type ReclaimEvent,
} from "@reclaim/core";
import { z } from "zod";
import { errorBody } from "./schemas";
import { route } from "./route";

type Handler = (event: ReclaimEvent, ctx: EventContext) => DeadlineRequest[] | Promise<DeadlineRequest[]>;

export const eventsRoute = route({
  method: "POST",
  url: "/v1/events",
  summary: "Report issue, run, workspace and company changes, and sync folders created",
  body: eventsBodySchema,
  responses: {
    202: z.object({ accepted: z.number().int(), deadlines: z.number().int() }),
    400: errorBody,
  },
  async handle({ body }, deps) {
    const now = deps.clock.now();
    const requests: DeadlineRequest[] = [];
    for (const event of body.events) {
      for (const [id, domain] of deps.domains) {
        const config = deps.configs.get(id as DomainId)!;
        const handler = domain.events?.[event.type] as Handler | undefined;
        if (!config.enabled || !handler) continue;
        requests.push(
          ...(await handler(event, { db: deps.db, clock: deps.clock, now, config, log: deps.log })),
        );
      }
    }
    // Durable once in the ledger; the jobs follow in the background (see requestSoon).
    await deps.queues.requestSoon(requests, (error) => deps.log.warn("scheduling deferred", { error }));
    return { status: 202, body: { accepted: body.events.length, deadlines: requests.length } };
  },
});
