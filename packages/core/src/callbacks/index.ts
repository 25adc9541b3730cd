export * from "./signature";
export * from "./report-callbacks";
