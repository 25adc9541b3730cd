/**
 * What every `GET /v1/stats/*` route accepts and checks: a domain (404 unknown, 501 not
 * implemented, as GET /v1/reports), a company id or `instance` (400 malformed), and for the
 * time series a bucket size and a range no longer than that size allows (400 naming `from`).
 */
import {
  DEFAULT_STATS_RANGE_MS,
  MAX_STATS_RANGE_MS,
  ReclaimError,
  STATS_BUCKETS,
  timestamp,
  type StatsBucket,
  type StatsFilter,
  type StatsRange,
} from "@reclaim/core";
import { z } from "zod";
import type { ApiDeps } from "../../deps";
import { implementedDomain } from "../guards";
import { domainId, scopeParam } from "../schemas";

export const filterQuery = {
  domain: domainId.optional().describe("Only this domain"),
  companyId: scopeParam
    .optional()
    .describe("Only entries of this company (or `instance`: entries of no company)"),
};

export const rangeQuery = {
  bucket: z
    .enum(STATS_BUCKETS as [StatsBucket, ...StatsBucket[]])
    .default("day")
    .describe("Bucket size (UTC): hour (ranges up to 31 days) or day (up to 366 days)"),
  from: timestamp()
    .optional()
    .describe(
      "Start (inclusive, truncated to its bucket); default `to` minus 2 days (hour) or 30 days (day)",
    ),
  // Without `from`, the range starts that far before `to`: it must stay storable too.
  to: timestamp({ subtractsUpTo: Math.max(...Object.values(DEFAULT_STATS_RANGE_MS)) })
    .optional()
    .describe("End (exclusive); default now"),
};

export function statsFilter(deps: ApiDeps, query: { domain?: string; companyId?: string }): StatsFilter {
  if (query.domain) implementedDomain(deps, query.domain);
  return { domain: query.domain, scope: query.companyId };
}

const DAY_MS = 86_400_000;

export function statsRange(
  deps: ApiDeps,
  query: { bucket: StatsBucket; from?: string; to?: string },
): StatsRange {
  const to = query.to ? new Date(query.to) : deps.clock.now();
  const from = query.from
    ? new Date(query.from)
    : new Date(to.getTime() - DEFAULT_STATS_RANGE_MS[query.bucket]);
  if (from.getTime() >= to.getTime()) {
    throw new ReclaimError("RECLAIM_ERR_VALIDATION", { message: "from: must be before to", field: "from" });
  }
  const max = MAX_STATS_RANGE_MS[query.bucket];
  if (to.getTime() - from.getTime() > max) {
    throw new ReclaimError("RECLAIM_ERR_VALIDATION", {
      message: `from: a range of ${query.bucket} buckets spans at most ${max / DAY_MS} days`,
      field: "from",
    });
  }
  return { bucket: query.bucket, from, to };
}

export const seriesBody = (key: "domain" | "reason") =>
  z.object({
    bucket: z.enum(STATS_BUCKETS as [StatsBucket, ...StatsBucket[]]),
    from: z.iso.datetime(),
    to: z.iso.datetime(),
    buckets: z
      .array(z.iso.datetime())
      .describe("Start of each bucket; every series has one value per bucket"),
    series: z.array(
      z.object({
        [key]: z.string(),
        entries: z.array(z.number().int()),
        bytes: z.array(z.number().int()),
      }),
    ),
  });
