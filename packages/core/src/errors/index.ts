export * from "./catalog";
export * from "./reclaim-error";
export * from "./config-error";
export * from "./permanent-error";
