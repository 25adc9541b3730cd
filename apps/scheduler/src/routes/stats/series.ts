/**
 * GET /v1/stats/reclaimed (bytes and entries removed, one series per domain) and
 * GET /v1/stats/skips (entries kept, one series per reason), per hour or day bucket.
 */
import { outcomeSeries } from "@reclaim/core";
import { z } from "zod";
import { route } from "../route";
import { errorBody } from "../schemas";
import { filterQuery, rangeQuery, seriesBody, statsFilter, statsRange } from "./filters";

const errors = { 400: errorBody, 404: errorBody, 501: errorBody };

function seriesRoute(
  url: string,
  operationId: string,
  summary: string,
  outcome: string,
  by: "domain" | "reason",
) {
  return route({
    method: "GET",
    url,
    operationId,
    summary,
    query: z.object({ ...filterQuery, ...rangeQuery }),
    responses: { 200: seriesBody(by), ...errors },
    async handle({ query }, deps) {
      const filter = statsFilter(deps, query);
      const range = statsRange(deps, query);
      const result = await outcomeSeries(deps.db, { outcome, by, ...filter, ...range });
      return {
        status: 200,
        body: {
          bucket: result.bucket,
          from: range.from.toISOString(),
          to: range.to.toISOString(),
          buckets: result.buckets,
          series: result.series.map((s) => ({ [by]: s.key, entries: s.entries, bytes: s.bytes })),
        },
      };
    },
  });
}

export const statsReclaimedRoute = seriesRoute(
  "/v1/stats/reclaimed",
  "getReclaimedSeries",
  "Bytes and entries removed per bucket, one series per domain",
  "removed",
  "domain",
);

export const statsSkipsRoute = seriesRoute(
  "/v1/stats/skips",
  "getSkipSeries",
  "Entries kept per bucket, one series per skip reason",
  "skipped",
  "reason",
);
