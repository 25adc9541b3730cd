export * from "./postgres";
export * from "./redis";
export * from "./wait";
export * from "./files";
export * from "./stack";
export * from "./processes";
export * from "./s3/rgw";
export * from "./s3/test-bucket";
