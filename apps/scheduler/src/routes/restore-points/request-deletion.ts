/**
 * POST /v1/companies/:companyId/restore-points/:id/request-deletion: delete this restore
 * point's object and mark it deleted once storage confirms. A pending one is deleted when its
 * one-hour capture grace ends (its capture may still be writing). 409 for an expiring row
 * (its expiry hook runs first, then it is deleted anyway).
 */
import { requestRestorePointDeletion } from "@reclaim/core";
import { statusChangeRoute } from "./access";

export const requestRestorePointDeletionRoute = statusChangeRoute({
  url: "/v1/companies/:companyId/restore-points/:id/request-deletion",
  operationId: "requestRestorePointDeletion",
  summary: "Request deletion of a restore point",
  change: requestRestorePointDeletion,
});
