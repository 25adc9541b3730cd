export * from "./client";
export * from "./locks";
export * from "./sql";
export { applyMigrations, ensureDatabase } from "./migrate";
export * from "./statements";
