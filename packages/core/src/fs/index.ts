export * from "./names";
export * from "./retired-names";
export * from "./tree";
export * from "./retire";
export * from "./leftovers";
