export * from "./ids";
export * from "./types";
export * from "./registry";
