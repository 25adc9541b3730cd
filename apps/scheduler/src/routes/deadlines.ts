import { companyIdOf, listDeadlines } from "@reclaim/core";
import { z } from "zod";
import { implementedDomain } from "./guards";
import { deadline, domainId, errorBody } from "./schemas";
import { route } from "./route";

export const deadlinesRoute = route({
  method: "GET",
  url: "/v1/deadlines",
  operationId: "listDeadlines",
  summary: "The deadline ledger: what is scheduled, and why",
  query: z.object({ domain: domainId.optional() }),
  responses: {
    200: z.object({ deadlines: z.array(deadline) }),
    400: errorBody,
    404: errorBody,
    501: errorBody,
  },
  async handle({ query }, deps) {
    if (query.domain) implementedDomain(deps, query.domain);
    const rows = await listDeadlines(deps.db, query.domain);
    return {
      status: 200,
      body: {
        deadlines: rows.map((r) => ({
          domain: r.domain,
          companyId: companyIdOf(r.companyId),
          reason: r.reason,
          dueAt: r.dueAt.toISOString(),
        })),
      },
    };
  },
});
