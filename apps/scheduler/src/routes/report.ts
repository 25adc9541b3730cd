import { companyIdOf, ReclaimError, toBatchReport } from "@reclaim/core";
import { z } from "zod";
import { errorBody, report, scopeParam } from "./schemas";
import { route } from "./route";

export const reportRoute = route({
  method: "GET",
  url: "/v1/reports/:reportId",
  operationId: "getReport",
  summary: "One batch report with every entry it looked at",
  params: z.object({ reportId: z.uuid() }),
  query: z.object({
    companyId: scopeParam
      .optional()
      .describe(
        "Only as this company (or `instance`) sees it: another scope's report is a 404, and only entries of this company are listed",
      ),
  }),
  responses: { 200: z.object({ report }), 400: errorBody, 404: errorBody },
  async handle({ params, query }, deps) {
    const row = await deps.db.reclaimBatchReport.findUnique({ where: { id: params.reportId } });
    const scope = query.companyId;
    if (!row || (scope !== undefined && row.companyId !== scope)) {
      throw new ReclaimError("RECLAIM_ERR_NOT_FOUND", {
        message: `reportId: no report "${params.reportId}"${scope ? ` of ${scope}` : ""}`,
        field: "reportId",
      });
    }
    const found = toBatchReport(row, true);
    if (scope !== undefined) {
      // An entry without a company belongs to the report's own scope.
      const own = companyIdOf(scope);
      found.entries = found.entries?.filter((e) => (e.companyId ?? own) === own);
    }
    return { status: 200, body: { report: found } };
  },
});
