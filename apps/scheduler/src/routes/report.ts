import { ReclaimError, toBatchReport } from "@reclaim/core";
import { z } from "zod";
import { errorBody, report } from "./schemas";
import { route } from "./route";

export const reportRoute = route({
  method: "GET",
  url: "/v1/reports/:reportId",
  operationId: "getReport",
  summary: "One batch report with every entry it looked at",
  params: z.object({ reportId: z.uuid() }),
  responses: { 200: z.object({ report }), 400: errorBody, 404: errorBody },
  async handle({ params }, deps) {
    const row = await deps.db.reclaimBatchReport.findUnique({ where: { id: params.reportId } });
    if (!row) {
      throw new ReclaimError("RECLAIM_ERR_NOT_FOUND", {
        message: `reportId: no report "${params.reportId}"`,
        field: "reportId",
      });
    }
    return { status: 200, body: { report: toBatchReport(row, true) } };
  },
});
