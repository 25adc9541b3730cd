export * from "./storable";
