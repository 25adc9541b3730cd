/** The restore-point ledger routes, in registration order (app.ts). */
import { activateRestorePointRoute } from "./activate";
import { getRestorePointRoute } from "./get";
import { listRestorePointsRoute } from "./list";
import { registerRestorePointRoute } from "./register";
import { requestRestorePointDeletionRoute } from "./request-deletion";
import { supersedeRestorePointRoute } from "./supersede";

export const restorePointRoutes = [
  registerRestorePointRoute,
  activateRestorePointRoute,
  supersedeRestorePointRoute,
  requestRestorePointDeletionRoute,
  getRestorePointRoute,
  listRestorePointsRoute,
];
