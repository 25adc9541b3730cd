/**
 * When skill version cache retention is due: at start-up (after the scheduler is ready),
 * the instance job lists the companies with caches and makes each company's job due; it
 * then asks for itself again every hour. Every other deadline comes from the checks
 * (retention when a grace window ends, continue, retry).
 */
import { INSTANCE_SCOPE, type DeadlineRequest } from "../../ledger";
import type { EventContext } from "../types";
import type { SkillVersionCachesConfig } from "./config";

const DOMAIN = "skill-version-caches";

export function onStartup(ctx: EventContext<SkillVersionCachesConfig>): DeadlineRequest[] {
  return [{ domain: DOMAIN, scope: INSTANCE_SCOPE, reason: "startup", dueAt: ctx.now }];
}
