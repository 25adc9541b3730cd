export * from "./clock";
export * from "./config";
export * from "./db";
export * from "./domains";
export * from "./errors";
export * from "./events";
export * from "./faults";
export * from "./fs";
export * from "./input";
export * from "./jobs";
export * from "./ledger";
export * from "./logging";
export * from "./process";
export * from "./queue";
export * from "./callbacks";
export * from "./restore-points";
export * from "./workspaces";
export * from "./stats";
// What the apps need of the restore-point domain itself (they import only from this root).
export {
  RESTORE_POINT_DOMAIN,
  startWakeListener,
  type RestorePointRetentionConfig,
  type WakeListener,
} from "./domains/restore-point-retention";
