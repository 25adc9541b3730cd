import { defineDomain } from "../types";
import { apply, finish } from "./check";
import { options, readConfig } from "./config";
import { events, onStartup } from "./events";

export const restorePointRetention = defineDomain({
  id: "restore-point-retention",
  title: "Restore points",
  options,
  readConfig,
  onStartup,
  events,
  apply,
  finish,
});

export { LIMITS, type RestorePointRetentionConfig } from "./config";
export { DOMAIN as RESTORE_POINT_DOMAIN, wakeRequest, type WakeReason } from "./events";
export { startWakeListener, parseWake, WAKE_CHANNEL, type WakeListener } from "./wake-listener";
export { EXPIRY_HOOK_EVENT, type ExpiryHookBody } from "./hook";
