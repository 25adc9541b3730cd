// Public API of @reclaim/shared: restore-point sealing, storage providers, object quarantine.
export * from "./errors";
export * from "./storage/storage-key";
export * from "./storage/provider";
export { createLocalDiskProvider, type LocalDiskOptions } from "./storage/local-disk";
export { createS3Provider, DEFAULT_S3_PART_SIZE, type S3Options } from "./storage/s3";
export {
  readStorageConfig,
  createStorageProvider,
  type StorageConfig,
  type StorageEnvOptions,
} from "./storage/config";
