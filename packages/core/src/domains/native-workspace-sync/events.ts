/**
 * When sync folder retention is due: at start-up (instance job: discovery and orphans), and
 * when a run creates its folder (that company's job computes the folder's deadline). Every
 * later deadline comes from the check itself (retention, recheck, retry, continue).
 */
import { INSTANCE_SCOPE, type DeadlineRequest } from "../../ledger";
import type { EventContext, EventHandlers } from "../types";
import type { NativeWorkspaceSyncConfig } from "./config";

const DOMAIN = "native-workspace-sync";

export function onStartup(ctx: EventContext<NativeWorkspaceSyncConfig>): DeadlineRequest[] {
  return [{ domain: DOMAIN, scope: INSTANCE_SCOPE, reason: "startup", dueAt: ctx.now }];
}

export const events: EventHandlers<NativeWorkspaceSyncConfig> = {
  "native_workspace_sync.folder_created": (events, ctx) =>
    events.map((event) => ({
      domain: DOMAIN,
      scope: event.companyId,
      reason: "folder_created",
      dueAt: ctx.now,
    })),
};
