/**
 * POST /v1/companies/:companyId/restore-points/:id/supersede: a newer restore point replaced
 * this active one; its object is deleted promptly. 409 for a pending or expiring row;
 * superseding a row already on its way out answers with it unchanged.
 */
import { supersedeRestorePoint } from "@reclaim/core";
import { statusChangeRoute } from "./access";

export const supersedeRestorePointRoute = statusChangeRoute({
  url: "/v1/companies/:companyId/restore-points/:id/supersede",
  operationId: "supersedeRestorePoint",
  summary: "Supersede an active restore point (its object is then deleted)",
  change: supersedeRestorePoint,
});
