/**
 * Storage providers: where sealed restore points live (`local_disk` or `s3`).
 *
 * Contract (every provider; one contract test suite runs against each):
 *
 *  - `put(key, body, byteLength)` consumes exactly `byteLength` bytes from `body`, stores them
 *    under `key`, reads the stored object back, and resolves only when the bytes read back
 *    have the SHA-256 and size of the bytes sent. Readers of `key` see the previous object or
 *    the new one, never a partial one. An existing object is replaced (key rotation rewrites
 *    small headers in place). A body that is shorter or longer than `byteLength`, an error of
 *    the body, or a failed read-back rejects, and nothing is reported stored.
 *  - `get(key, {range})` streams the object, or `range.length` bytes of it from
 *    `range.offset`. A missing object rejects with RECLAIM_ERR_STORAGE_NOT_FOUND before any
 *    byte is streamed; a failure mid-stream errors the stream with a StorageError.
 *  - `head(key)` resolves `{byteSize}`, or null when the object does not exist.
 *  - `delete(key)` is idempotent: deleting a missing object succeeds. It resolves only after
 *    the provider confirms the object is gone (RECLAIM_ERR_STORAGE_DELETE_UNCONFIRMED if not).
 *
 * Keys are `StorageKey` values, never strings, so every object is company-scoped.
 * Failures are StorageErrors: permanent ones (bad key, missing object, refused credentials,
 * wrong length) stop retries; unavailability and I/O errors are retryable.
 *
 * Example:
 *
 *   const storage = createStorageProvider(readStorageConfig(process.env, { instanceRoot }));
 *   const key = StorageKey.of(companyId, `git-restore-points/${workspaceId}/${generation}/bundle`);
 *   const { sha256, byteSize } = await storage.put(key, fs.createReadStream(file), size);
 *   const body = await storage.get(key, { range: { offset: 0, length: 1024 } });
 *   await storage.delete(key); // the ledger marks the row deleted only after this resolves
 */
import type { Readable } from "node:stream";
import type { StorageKey } from "./storage-key";

export type StorageProviderKind = "local_disk" | "s3";

export interface StoredObject {
  key: StorageKey;
  /** Bytes stored. */
  byteSize: number;
  /** SHA-256 of the stored bytes, lowercase hex, as read back from the provider. */
  sha256: string;
}

export interface ByteRange {
  /** First byte, counted from 0. */
  offset: number;
  /** Number of bytes, at least 1; a range past the end is cut at the end. */
  length: number;
}

export interface GetOptions {
  /** Only these bytes. Default: the whole object. An offset at or past the end is refused. */
  range?: ByteRange;
}

export interface ObjectHead {
  byteSize: number;
}

export interface StorageProvider {
  readonly kind: StorageProviderKind;
  put(key: StorageKey, body: Readable, byteLength: number): Promise<StoredObject>;
  get(key: StorageKey, options?: GetOptions): Promise<Readable>;
  head(key: StorageKey): Promise<ObjectHead | null>;
  delete(key: StorageKey): Promise<void>;
}
