import { listReports } from "@reclaim/core";
import { z } from "zod";
import { implementedDomain } from "./guards";
import { domainId, errorBody, report, scopeParam } from "./schemas";
import { route } from "./route";

export const reportsRoute = route({
  method: "GET",
  url: "/v1/reports",
  operationId: "listReports",
  summary: "Batch reports, newest first",
  query: z.object({
    domain: domainId.optional(),
    companyId: scopeParam.optional().describe("A company id, or `instance`"),
    limit: z.coerce.number().int().min(1).max(500).default(50),
  }),
  responses: { 200: z.object({ reports: z.array(report) }), 400: errorBody, 404: errorBody, 501: errorBody },
  async handle({ query }, deps) {
    if (query.domain) implementedDomain(deps, query.domain);
    const reports = await listReports(deps.db, {
      domain: query.domain,
      companyId: query.companyId === "instance" ? null : query.companyId,
      limit: query.limit,
    });
    return { status: 200, body: { reports } };
  },
});
