export * from "./batch-reporter";
export * from "./classify";
export * from "./cursors";
export * from "./run-job";
