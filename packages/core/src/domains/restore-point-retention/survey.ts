/**
 * What the storage provider says, read outside any lock: the provider this process uses,
 * and the read-back check of a sealed object before its restore point is activated (the
 * whole payload is streamed and hashed here, and the sealed key header is read for its
 * format version and key fingerprint; nothing the caller says about the object is trusted).
 */
import { createHash } from "node:crypto";
import {
  inspectSealHeader,
  MAX_SEAL_HEADER_BYTES,
  readSealHeaderBytes,
  SEAL_HEADER_SUFFIX,
  SealError,
  StorageKey,
  type StorageProvider,
} from "@reclaim/shared";

export { storageFor } from "../storage";

/** What a sealed key header (`<key>.seal-header`) says, when it can be read. */
type SealHeaderFacts =
  | { state: "absent" }
  | { state: "unreadable"; reason: string }
  /** `keyFingerprint` is null for a format version this build cannot read. */
  | { state: "read"; formatVersion: number; keyFingerprint: string | null };

export interface StoredFacts {
  /** The payload exists; `sha256` and `byteSize` are what the provider returned for it. */
  found: boolean;
  sha256: string | null;
  byteSize: number | null;
  /** The sealed key header: without it the payload opens nothing. */
  header: SealHeaderFacts;
}

async function readHeader(storage: StorageProvider, key: StorageKey): Promise<SealHeaderFacts> {
  const headerKey = key.withSuffix(SEAL_HEADER_SUFFIX);
  const head = await storage.head(headerKey);
  if (head === null) return { state: "absent" };
  if (head.byteSize === 0 || head.byteSize > MAX_SEAL_HEADER_BYTES) {
    return { state: "unreadable", reason: `it is ${head.byteSize} bytes` };
  }
  try {
    return { state: "read", ...inspectSealHeader(await readSealHeaderBytes(storage, key)) };
  } catch (error) {
    if (error instanceof SealError) return { state: "unreadable", reason: error.message };
    throw error;
  }
}

/** Reads the payload back in full and hashes it, and reads its key header; storage failures propagate (StorageError). */
export async function readBack(storage: StorageProvider, storageKey: string): Promise<StoredFacts> {
  const key = StorageKey.parse(storageKey);
  const head = await storage.head(key);
  const header = await readHeader(storage, key);
  if (head === null) return { found: false, sha256: null, byteSize: null, header };
  const hash = createHash("sha256");
  let byteSize = 0;
  for await (const chunk of (await storage.get(key)) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    byteSize += chunk.length;
  }
  return { found: true, sha256: hash.digest("hex"), byteSize, header };
}
