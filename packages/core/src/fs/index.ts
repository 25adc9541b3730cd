export * from "./names";
export * from "./retired-names";
export * from "./tree";
export * from "./remove-tree";
export * from "./proven-dir";
export * from "./retire";
export * from "./leftovers";
export * from "./proven-path";
