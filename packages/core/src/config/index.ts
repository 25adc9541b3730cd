export * from "./option";
export * from "./service";
