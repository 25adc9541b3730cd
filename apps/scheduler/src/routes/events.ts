/**
 * POST /v1/events: changes from the Paperclip server. Each event goes to every enabled
 * domain that subscribes to its type; what they make due is recorded in the ledger and
 * scheduled. The whole batch is validated before anything is recorded, and recorded in one
 * transaction. A domain's handler gets all the events of its type at once, so a request costs
 * the same few statements for one event or many.
 */
import {
  eventsBodySchema,
  prismaTransaction,
  type DeadlineRequest,
  type DomainId,
  type EventContext,
  type ReclaimEvent,
} from "@reclaim/core";
import { z } from "zod";
import { errorBody } from "./schemas";
import { route } from "./route";

type Handler = (
  events: readonly ReclaimEvent[],
  ctx: EventContext,
) => DeadlineRequest[] | Promise<DeadlineRequest[]>;

export const eventsRoute = route({
  method: "POST",
  url: "/v1/events",
  operationId: "recordEvents",
  summary: "Report issue, run, workspace and company changes, and sync folders created",
  body: eventsBodySchema,
  responses: {
    202: z.object({ accepted: z.number().int(), deadlines: z.number().int() }),
    400: errorBody,
  },
  async handle({ body }, deps) {
    const now = deps.clock.now();
    // Each handler gets all the events of its type at once (types in order of first appearance).
    const byType = new Map<ReclaimEvent["type"], ReclaimEvent[]>();
    for (const event of body.events) {
      const same = byType.get(event.type);
      if (same) same.push(event);
      else byType.set(event.type, [event]);
    }
    // One transaction: what the handlers store and the deadlines they make due are recorded
    // together or not at all.
    const { requests, keys } = await prismaTransaction(deps.db, async (tx, client) => {
      const requests: DeadlineRequest[] = [];
      for (const [type, events] of byType) {
        for (const [id, domain] of deps.domains) {
          const config = deps.configs.get(id as DomainId)!;
          const handler = domain.events?.[type] as Handler | undefined;
          if (!config.enabled || !handler) continue;
          requests.push(
            ...(await handler(events, { db: tx, clock: deps.clock, now, config, log: deps.log })),
          );
        }
      }
      return { requests, keys: await deps.queues.record(requests, client ?? tx) };
    });
    // Durable once committed; the jobs follow in the background (see requestSoon).
    void deps.queues.syncManySoon(keys, (error) => deps.log.warn("scheduling deferred", { error }));
    return { status: 202, body: { accepted: body.events.length, deadlines: requests.length } };
  },
});
