export * from "./scope";
export * from "./deadlines";
export * from "./cursors";
export * from "./reports";
export * from "./report-totals";
export * from "./settle";
export * from "./report-stats";
export * from "./item-deadlines";
