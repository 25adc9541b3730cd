export * from "./catalog";
