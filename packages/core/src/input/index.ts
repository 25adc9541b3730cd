export * from "./storable";
export * from "./cursor";
