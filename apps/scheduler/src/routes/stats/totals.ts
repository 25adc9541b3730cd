/** GET /v1/stats/totals: per domain, what was reclaimed, kept and failed in the last 24 h, 7 d, 30 d. */
import { domainTotals, hourOf, STATS_WINDOWS } from "@reclaim/core";
import { z } from "zod";
import { route } from "../route";
import { errorBody } from "../schemas";
import { filterQuery, statsFilter } from "./filters";

const window = z.object({
  reclaimedBytes: z.number().int(),
  removed: z.number().int(),
  kept: z.number().int().describe("Entries kept with a reason (skipped), real runs and diagnoses"),
  failed: z.number().int(),
  candidates: z.number().int(),
  candidateBytes: z.number().int(),
  dryRunCandidates: z.number().int().describe("Candidates of dry runs: what would have been reclaimed"),
  dryRunCandidateBytes: z.number().int(),
});

export const statsTotalsRoute = route({
  method: "GET",
  url: "/v1/stats/totals",
  operationId: "getStatsTotals",
  summary: "Per domain: entries and bytes reclaimed, kept and failed over the last 24 h, 7 d and 30 d",
  query: z.object(filterQuery),
  responses: {
    200: z.object({
      hour: z.iso.datetime().describe("The current hour bucket: each window ends with it"),
      domains: z.array(
        z.object({
          domain: z.string(),
          windows: z.object(Object.fromEntries(STATS_WINDOWS.map((w) => [w, window]))),
        }),
      ),
    }),
    400: errorBody,
    404: errorBody,
    501: errorBody,
  },
  async handle({ query }, deps) {
    const filter = statsFilter(deps, query);
    const now = deps.clock.now();
    const domains = filter.domain ? [filter.domain] : [...deps.domains.keys()];
    const totals = await domainTotals(deps.db, domains, filter, now);
    return { status: 200, body: { hour: hourOf(now).toISOString(), domains: totals } };
  },
});
