export * from "./liveness";
export * from "./scratch";
