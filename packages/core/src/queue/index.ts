export * from "./names";
export * from "./connection";
export * from "./deadline-queues";
