import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createLocalDiskProvider, StorageKey } from "../../src";
import { createSha256, OFF_THREAD_MIN_BYTES } from "../../src/storage/sha256-off-thread";

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("SHA-256 of a verified write", () => {
  const hashInPieces = async (bytes: Buffer, pieceSize: number): Promise<string> => {
    const hash = createSha256(bytes.length, pieceSize);
    try {
      for (let at = 0; at < bytes.length;) {
        const buffer = await hash.buffer();
        expect(buffer.length).toBe(pieceSize);
        // Pieces of every size up to a whole buffer, as short reads give them.
        const length = Math.min(bytes.length - at, at % 3 === 0 ? pieceSize : 777_777);
        bytes.copy(buffer, 0, at, at + length);
        hash.update(buffer, length);
        at += length;
      }
      return await hash.digest();
    } finally {
      await hash.close();
    }
  };

  it("hashed on a worker thread, through its circulating buffers, equals the inline hash", async () => {
    const bytes = randomBytes(OFF_THREAD_MIN_BYTES + 1_234_567);
    expect(await hashInPieces(bytes, 2 * 1024 * 1024)).toBe(sha256(bytes));
  });

  it("below the worker-thread size hashes inline, with the same result", async () => {
    const bytes = randomBytes(3_000_001);
    expect(await hashInPieces(bytes, 1024 * 1024)).toBe(sha256(bytes));
  });

  it("reports, for an object hashed off the main thread, the SHA-256 of the bytes stored", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "reclaim-sha-off-thread-"));
    try {
      const storage = createLocalDiskProvider({ baseDir: root });
      const bytes = randomBytes(OFF_THREAD_MIN_BYTES + 5 * 1024 * 1024 + 1);
      const key = StorageKey.of("00000000-0000-4000-8000-000000000001", "big/object");
      const pieces = Array.from({ length: Math.ceil(bytes.length / 65536) }, (_, i) =>
        bytes.subarray(i * 65536, (i + 1) * 65536),
      );
      const stored = await storage.put(key, Readable.from(pieces), bytes.length);
      const onDisk = await readFile(path.join(root, "companies", key.companyId, "big", "object"));
      expect(stored).toMatchObject({ sha256: sha256(onDisk), byteSize: bytes.length });
      expect(onDisk.equals(bytes)).toBe(true);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
