// The error catalog and ConfigError are @reclaim/shared's (one of each for every package);
// core adds the API's error class (status, field) and PermanentError.
export { ConfigError, ERRORS, type ApiErrorCode as ErrorCode } from "@reclaim/shared";
export * from "./reclaim-error";
export * from "./permanent-error";
