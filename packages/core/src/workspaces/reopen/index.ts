export * from "./types";
export { runReopen, type ReopenDeps } from "./run";
export * from "./queue";
