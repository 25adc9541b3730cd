/** GET /v1/domains: every domain id with its controls, queue counts and next deadline. */
import { DOMAIN_IDS, shownValue, type DomainId } from "@reclaim/core";
import { z } from "zod";
import { route } from "./route";

const counts = z.object({
  waiting: z.number().int(),
  delayed: z.number().int(),
  active: z.number().int(),
  completed: z.number().int(),
  failed: z.number().int(),
});

export const domainsRoute = route({
  method: "GET",
  url: "/v1/domains",
  operationId: "listDomains",
  summary: "Domains: configuration, queue counts, next deadline",
  responses: {
    200: z.object({
      domains: z.array(
        z.object({
          id: z.string(),
          title: z.string().nullable(),
          implemented: z.boolean(),
          enabled: z.boolean(),
          dryRun: z.boolean(),
          config: z.record(z.string(), z.unknown()),
          controls: z.array(
            z.object({
              env: z.string(),
              default: z.string().nullable(),
              value: z.unknown().describe("Current value; secrets show only as set or unset"),
              description: z.string(),
            }),
          ),
          queue: counts.nullable(),
          nextDeadline: z.iso.datetime().nullable(),
        }),
      ),
    }),
  },
  async handle(_input, deps) {
    const next = await deps.db.reclaimDeadline.groupBy({ by: ["domain"], _min: { dueAt: true } });
    const nextByDomain = new Map(next.map((n) => [n.domain, n._min.dueAt]));
    const domains = await Promise.all(
      DOMAIN_IDS.map(async (id: DomainId) => {
        const domain = deps.domains.get(id);
        const config = deps.configs.get(id);
        if (!domain || !config) {
          return {
            id,
            title: null,
            implemented: false,
            enabled: false,
            dryRun: false,
            config: {},
            controls: [],
            queue: null,
            nextDeadline: null,
          };
        }
        const c = await deps.queues
          .queue(id)
          .getJobCounts("waiting", "prioritized", "delayed", "active", "completed", "failed");
        return {
          id,
          title: domain.title,
          implemented: true,
          enabled: config.enabled,
          dryRun: config.dryRun,
          // Built from the declared controls only: a domain's full config can hold storage
          // credentials and hook secrets, which the API never shows.
          config: Object.fromEntries(
            Object.entries(domain.options).map(([key, o]) => [key, shownValue(o, deps.env)]),
          ),
          controls: Object.values(domain.options).map((o) => ({
            env: o.env,
            default: o.defaultText ?? null,
            value: shownValue(o, deps.env),
            description: o.description,
          })),
          queue: {
            waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
            delayed: c.delayed ?? 0,
            active: c.active ?? 0,
            completed: c.completed ?? 0,
            failed: c.failed ?? 0,
          },
          nextDeadline: nextByDomain.get(id)?.toISOString() ?? null,
        };
      }),
    );
    return { status: 200, body: { domains } };
  },
});
