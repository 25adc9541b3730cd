/**
 * Sealing: envelope encryption of restore points, streamed into a storage provider.
 *
 * Lifecycle:
 *
 *  1. `seal(plaintext, {instanceKey, storage, storageKey, plaintextSize})` draws a fresh random
 *     256-bit data key for this restore point, encrypts the stream with AES-256-GCM in
 *     authenticated chunks into `storageKey` (the payload), wraps the data key with the instance
 *     key into `<storageKey>.seal-header`, and resolves with what the ledger records:
 *     `{storageKey, sha256, byteSize, formatVersion, keyFingerprint}` (sha256 and byteSize are
 *     of the stored payload, as read back by the provider). Memory stays at a few chunks,
 *     whatever the payload size.
 *  2. `open(storage, storageKey, instanceKey)` resolves with a stream of verified plaintext.
 *  3. `rewrap(storage, storageKey, {from, to})` rotates the instance key: it rewrites the
 *     132-byte header only; the payload, its SHA-256 and its size are untouched.
 *  4. `deleteSealed(storage, storageKey)` removes the payload, then the header: an
 *     interrupted delete leaves at most a 132-byte header that opens nothing, never a payload
 *     whose key is gone (which could not be told from a corrupt one).
 *
 * Failure behaviour:
 *
 *  - `seal` rejects, and reports nothing stored, when the plaintext is not exactly
 *    `plaintextSize` bytes (RECLAIM_ERR_SEAL_LENGTH_MISMATCH), when the source errors, or when
 *    storage fails; it then deletes what it had written, best effort (a pending ledger row's
 *    cleanup deletes the same keys, idempotently, if that fails too).
 *  - `open` rejects before streaming on an unknown format or version
 *    (RECLAIM_ERR_SEAL_UNKNOWN_VERSION: refused, never guessed), a header wrapped by another
 *    instance key (RECLAIM_ERR_SEAL_WRONG_KEY) or a header that fails authentication
 *    (RECLAIM_ERR_SEAL_TAMPERED). While streaming, every chunk is authenticated before any of
 *    its bytes are pushed; a flipped bit, reordered chunks or a payload of another restore
 *    point error the stream with RECLAIM_ERR_SEAL_TAMPERED, a cut-off payload with
 *    RECLAIM_ERR_SEAL_TRUNCATED (the last chunk carries a final flag, so even a cut at a
 *    chunk boundary is caught). Only a stream that ends without error is the restore point:
 *    a consumer must write into staging and discard it on error (restores already do).
 *  - All Seal errors are permanent (a corrupt object does not heal); storage errors keep
 *    their own class.
 *
 * Example:
 *
 *   const instanceKey = await loadInstanceKey({ instanceRoot });
 *   assertRestorePointsAllowed(storage.kind, instanceKey.source);
 *   const key = StorageKey.of(companyId, `git-restore-points/${workspaceId}/${generation}/bundle`);
 *   const sealed = await seal(fs.createReadStream(bundle), {
 *     instanceKey, storage, storageKey: key, plaintextSize: (await stat(bundle)).size,
 *   });
 *   // ... record `sealed` in the ledger, activate ...
 *   await pipeline(await open(storage, key, instanceKey), fs.createWriteStream(staging));
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { pipeline, Readable } from "node:stream";
import { ConfigError, SealError } from "../errors";
import type { StorageProvider } from "../storage/provider";
import type { StorageKey } from "../storage/storage-key";
import { OpenTransform, SealTransform } from "./chunk-cipher";
import { HashCheck } from "./hash-check";
import type { InstanceKey } from "./instance-key";
import {
  DATA_KEY_BYTES,
  decodeHeader,
  DEFAULT_CHUNK_SIZE,
  encodeHeader,
  encodeHeaderAad,
  encodePreamble,
  FORMAT_VERSION,
  HEADER_BYTES,
  MAX_CHUNK_SIZE,
  MIN_CHUNK_SIZE,
  PAYLOAD_ID_BYTES,
  sealedPayloadSize,
  type SealHeader,
} from "./seal-format";

export interface SealOptions {
  instanceKey: InstanceKey;
  storage: StorageProvider;
  /** Where the payload goes; the header goes to `storageKey.withSuffix(".seal-header")`. */
  storageKey: StorageKey;
  /** Exact number of plaintext bytes the stream yields (known length: storage needs it up front). */
  plaintextSize: number;
  /** Plaintext bytes per authenticated chunk. Default 1 MiB; 4 KiB to 16 MiB. */
  chunkSize?: number;
}

/** What the ledger records for a sealed restore point. */
export interface SealedObject {
  /** `StorageKey.path` of the payload. */
  storageKey: string;
  /** SHA-256 of the stored payload bytes, lowercase hex. */
  sha256: string;
  /** Stored payload bytes. */
  byteSize: number;
  plaintextSize: number;
  formatVersion: number;
  /** Fingerprint of the instance key that wraps the data key (InstanceKey.fingerprint). */
  keyFingerprint: string;
}

export interface OpenOptions {
  /**
   * The ledger's SHA-256 of the payload: the stream errors with
   * RECLAIM_ERR_SEAL_HASH_MISMATCH at its end when the stored bytes differ. Default: unchecked
   * (chunk authentication already refuses any change).
   */
  expectedSha256?: string;
}

export const SEAL_HEADER_SUFFIX = ".seal-header";

export async function seal(plaintext: Readable, options: SealOptions): Promise<SealedObject> {
  const { instanceKey, storage, storageKey, plaintextSize } = options;
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isSafeInteger(chunkSize) || chunkSize < MIN_CHUNK_SIZE || chunkSize > MAX_CHUNK_SIZE) {
    throw new ConfigError(
      "chunkSize",
      `must be an integer from ${MIN_CHUNK_SIZE} to ${MAX_CHUNK_SIZE} bytes (got ${chunkSize})`,
    );
  }
  if (!Number.isSafeInteger(plaintextSize) || plaintextSize < 0) {
    throw new ConfigError("plaintextSize", `must be a non-negative integer (got ${plaintextSize})`);
  }
  const dataKey = randomBytes(DATA_KEY_BYTES);
  const params = { chunkSize, payloadId: randomBytes(PAYLOAD_ID_BYTES) };
  const headerKey = storageKey.withSuffix(SEAL_HEADER_SUFFIX);
  const sealer = new SealTransform(dataKey, encodePreamble(params), params, plaintextSize);
  const sealed = pipeline(plaintext, sealer, () => undefined);
  try {
    const payload = await storage.put(storageKey, sealed, sealedPayloadSize(plaintextSize, chunkSize));
    const header = wrapDataKey(dataKey, { ...params, plaintextSize }, instanceKey);
    await storage.put(headerKey, Readable.from([header]), HEADER_BYTES);
    return {
      storageKey: storageKey.path,
      sha256: payload.sha256,
      byteSize: payload.byteSize,
      plaintextSize,
      formatVersion: FORMAT_VERSION,
      keyFingerprint: instanceKey.fingerprint,
    };
  } catch (error) {
    plaintext.destroy();
    await deleteSealed(storage, storageKey).catch(() => undefined);
    throw error;
  } finally {
    dataKey.fill(0);
  }
}

export async function open(
  storage: StorageProvider,
  storageKey: StorageKey,
  instanceKey: InstanceKey,
  options: OpenOptions = {},
): Promise<Readable> {
  const header = await readHeader(storage, storageKey);
  const dataKey = unwrapDataKey(header, instanceKey);
  const payload = await storage.get(storageKey);
  const opener = new OpenTransform(dataKey, header, header.plaintextSize);
  if (options.expectedSha256) {
    return pipeline(payload, new HashCheck(options.expectedSha256), opener, () => undefined);
  }
  return pipeline(payload, opener, () => undefined);
}

/**
 * Re-wraps the data key of one sealed object from instance key `from` to `to`. Idempotent:
 * an object already wrapped by `to` is left as it is, so an interrupted rotation can simply
 * run again. The header is replaced atomically by the provider's put.
 */
export async function rewrap(
  storage: StorageProvider,
  storageKey: StorageKey,
  keys: { from: InstanceKey; to: InstanceKey },
): Promise<{ keyFingerprint: string }> {
  const header = await readHeader(storage, storageKey);
  if (header.keyFingerprint.toString("hex") === keys.to.fingerprint) {
    unwrapDataKey(header, keys.to).fill(0); // still proves the header is intact
    return { keyFingerprint: keys.to.fingerprint };
  }
  const dataKey = unwrapDataKey(header, keys.from);
  try {
    const rewrapped = wrapDataKey(dataKey, header, keys.to);
    await storage.put(storageKey.withSuffix(SEAL_HEADER_SUFFIX), Readable.from([rewrapped]), HEADER_BYTES);
    return { keyFingerprint: keys.to.fingerprint };
  } finally {
    dataKey.fill(0);
  }
}

/** Deletes payload, then header; idempotent, resolves once the provider confirms both gone. */
export async function deleteSealed(storage: StorageProvider, storageKey: StorageKey): Promise<void> {
  await storage.delete(storageKey);
  await storage.delete(storageKey.withSuffix(SEAL_HEADER_SUFFIX));
}

function wrapDataKey(
  dataKey: Buffer,
  fields: Pick<SealHeader, "chunkSize" | "payloadId" | "plaintextSize">,
  instanceKey: InstanceKey,
): Buffer {
  const unwrapped = { ...fields, keyFingerprint: Buffer.from(instanceKey.fingerprint, "hex") };
  const wrapNonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", instanceKey.key, wrapNonce);
  cipher.setAAD(encodeHeaderAad(unwrapped));
  const wrappedKey = Buffer.concat([cipher.update(dataKey), cipher.final()]);
  return encodeHeader({ ...unwrapped, wrapNonce, wrappedKey, wrapTag: cipher.getAuthTag() });
}

function unwrapDataKey(header: SealHeader, instanceKey: InstanceKey): Buffer {
  const fingerprint = header.keyFingerprint.toString("hex");
  if (fingerprint !== instanceKey.fingerprint) {
    throw new SealError(
      "RECLAIM_ERR_SEAL_WRONG_KEY",
      `wrapped by key ${fingerprint.slice(0, 12)}, this instance has ${instanceKey.fingerprint.slice(0, 12)}`,
    );
  }
  const decipher = createDecipheriv("aes-256-gcm", instanceKey.key, header.wrapNonce);
  decipher.setAAD(encodeHeaderAad(header));
  decipher.setAuthTag(header.wrapTag);
  const dataKey = decipher.update(header.wrappedKey);
  try {
    decipher.final();
  } catch (error) {
    dataKey.fill(0);
    throw new SealError("RECLAIM_ERR_SEAL_TAMPERED", "header failed authentication", { cause: error });
  }
  return dataKey;
}

/** A header is 132 bytes in format version 1; anything this big is not one. */
export const MAX_SEAL_HEADER_BYTES = 4096;

/**
 * The bytes of `<storageKey>.seal-header`, as stored (the provider's errors propagate: a
 * missing header is RECLAIM_ERR_STORAGE_NOT_FOUND). Refusing more than
 * `MAX_SEAL_HEADER_BYTES` early keeps a bogus multi-GiB "header" out of memory.
 */
export async function readSealHeaderBytes(storage: StorageProvider, storageKey: StorageKey): Promise<Buffer> {
  const stream = await storage.get(storageKey.withSuffix(SEAL_HEADER_SUFFIX));
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_SEAL_HEADER_BYTES) {
      stream.destroy();
      throw new SealError("RECLAIM_ERR_SEAL_TAMPERED", `header is over ${MAX_SEAL_HEADER_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function readHeader(storage: StorageProvider, storageKey: StorageKey): Promise<SealHeader> {
  return decodeHeader(await readSealHeaderBytes(storage, storageKey));
}
