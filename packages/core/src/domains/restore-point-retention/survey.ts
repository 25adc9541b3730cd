/**
 * What the storage provider says, read outside any lock: the provider this process uses,
 * and the read-back check of a sealed object before its restore point is activated (the
 * whole payload is streamed and hashed here; the caller's hash is never trusted).
 */
import { createHash } from "node:crypto";
import {
  createStorageProvider,
  SEAL_HEADER_SUFFIX,
  StorageKey,
  type StorageConfig,
  type StorageProvider,
} from "@reclaim/shared";

const providers = new WeakMap<StorageConfig, StorageProvider>();

/** One provider per configuration (a process reads its configuration once). */
export function storageFor(config: StorageConfig): StorageProvider {
  let provider = providers.get(config);
  if (!provider) {
    provider = createStorageProvider(config);
    providers.set(config, provider);
  }
  return provider;
}

export interface StoredFacts {
  /** The payload exists; `sha256` and `byteSize` are what the provider returned for it. */
  found: boolean;
  sha256: string | null;
  byteSize: number | null;
  /** The sealed key header (`<key>.seal-header`) exists: without it the payload opens nothing. */
  headerFound: boolean;
}

/** Reads the payload back in full and hashes it; storage failures propagate (StorageError). */
export async function readBack(storage: StorageProvider, storageKey: string): Promise<StoredFacts> {
  const key = StorageKey.parse(storageKey);
  const head = await storage.head(key);
  const header = await storage.head(key.withSuffix(SEAL_HEADER_SUFFIX));
  if (head === null) return { found: false, sha256: null, byteSize: null, headerFound: header !== null };
  const hash = createHash("sha256");
  let byteSize = 0;
  for await (const chunk of (await storage.get(key)) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    byteSize += chunk.length;
  }
  return { found: true, sha256: hash.digest("hex"), byteSize, headerFound: header !== null };
}
