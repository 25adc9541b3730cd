export * from "./postgres";
export * from "./redis";
export * from "./s3/rgw";
export * from "./s3/test-bucket";
