export * from "./names";
export * from "./connection";
export * from "./deadline-queues";
export { FINISHED_GATHER_MS } from "./background-sync";
export * from "./finished-follower";
