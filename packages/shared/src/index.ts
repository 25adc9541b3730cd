// Public API of @reclaim/shared: restore-point sealing, storage providers, object quarantine.
export {
  ReclaimError,
  ConfigError,
  SealError,
  StorageError,
  QuarantineError,
  isPermanentError,
  ERRORS,
  type ApiErrorCode,
  errnoCode,
  ignoreErrno,
  type ReclaimErrorCode,
  type SealErrorCode,
  type StorageErrorCode,
  type QuarantineErrorCode,
} from "./errors";
export * from "./uuid";
export { readFileBounded, type BoundedRead } from "./bounded-read";
export { sliced, SLICE_CALLS } from "./sliced";
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
export {
  loadInstanceKey,
  decodeInstanceKey,
  fingerprintOf,
  type InstanceKey,
  type InstanceKeySource,
  type LoadInstanceKeyOptions,
} from "./crypto/instance-key";
export { assertRestorePointsAllowed } from "./crypto/restore-point-policy";
export {
  seal,
  open,
  rewrap,
  deleteSealed,
  SEAL_HEADER_SUFFIX,
  MAX_SEAL_HEADER_BYTES,
  readSealHeaderBytes,
  type SealOptions,
  type SealedObject,
  type OpenOptions,
} from "./crypto/seal";
export {
  FORMAT_VERSION as SEAL_FORMAT_VERSION,
  DEFAULT_CHUNK_SIZE as SEAL_DEFAULT_CHUNK_SIZE,
  sealedPayloadSize,
  inspectHeader as inspectSealHeader,
} from "./crypto/seal-format";
export {
  withObjectQuarantine,
  QUARANTINE_PREFIX,
  type QuarantineContext,
  type QuarantineOptions,
  type QuarantineResult,
} from "./quarantine/quarantine";
export type { PublishedObjects } from "./quarantine/publish";
export { PACK_ORDER } from "./quarantine/pack-files";
export type { RecoveryFailure } from "./quarantine/pack-recovery";
export { realPublishFs, type PublishFs } from "./quarantine/publish-fs";
export { quoteAlternate } from "./quarantine/git-env";
export { systemClock, type Clock } from "./clock";
export type { Timer } from "./quarantine/timing";
export * from "./tree-snapshot";
export * from "./git";
