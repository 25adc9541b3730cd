/** The console's aggregates as JSON, one indexed query each (packages/core/src/stats). */
import { statsRestorePointsRoute } from "./restore-points";
import { statsReclaimedRoute, statsSkipsRoute } from "./series";
import { statsTotalsRoute } from "./totals";

export const statsRoutes = [statsTotalsRoute, statsReclaimedRoute, statsSkipsRoute, statsRestorePointsRoute];
