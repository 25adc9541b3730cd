import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import {
  createLocalDiskProvider,
  decodeInstanceKey,
  deleteSealed,
  fingerprintOf,
  open,
  rewrap,
  seal,
  SEAL_HEADER_SUFFIX,
  SealError,
  sealedPayloadSize,
  StorageKey,
  type InstanceKey,
  type StorageProvider,
} from "../../src";
import { rejectionOf } from "../rejection";

const CHUNK = 4096;
let root: string;
let storage: StorageProvider;
const company = randomUUID();

function instanceKey(): InstanceKey {
  const key = randomBytes(32);
  return { key, fingerprint: fingerprintOf(key), source: "env" };
}
const keyA = instanceKey();
const keyB = instanceKey();

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "reclaim-seal-"));
  storage = createLocalDiskProvider({ baseDir: root });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function newKey(): StorageKey {
  return StorageKey.of(company, `git-restore-points/ws/${randomUUID()}/bundle`);
}
function fileOf(key: StorageKey): string {
  return path.join(root, ...key.path.split("/"));
}
async function sealBytes(data: Buffer, key = newKey(), by = keyA) {
  const pieces = [];
  for (let i = 0; i < data.length; i += 1000) pieces.push(data.subarray(i, i + 1000));
  const sealed = await seal(Readable.from(pieces), {
    instanceKey: by,
    storage,
    storageKey: key,
    plaintextSize: data.length,
    chunkSize: CHUNK,
  });
  return { key, sealed };
}

/** Reads an opened stream to its end; returns what it yielded before failing, and the failure. */
async function drain(stream: Readable): Promise<{ bytes: Buffer; error?: SealError }> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return { bytes: Buffer.concat(chunks) };
  } catch (error) {
    if (!(error instanceof SealError)) throw error;
    return { bytes: Buffer.concat(chunks), error };
  }
}
async function flipByte(file: string, at: number): Promise<void> {
  const bytes = await readFile(file);
  bytes[at] = bytes[at]! ^ 0x01;
  await writeFile(file, bytes);
}

describe("seal and open", () => {
  it.each([0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17])(
    "round-trips %i plaintext bytes",
    async (size) => {
      const data = randomBytes(size);
      const { key, sealed } = await sealBytes(data);
      const stored = await readFile(fileOf(key));
      expect(sealed).toEqual({
        storageKey: key.path,
        sha256: createHash("sha256").update(stored).digest("hex"),
        byteSize: sealedPayloadSize(size, CHUNK),
        plaintextSize: size,
        formatVersion: 1,
        keyFingerprint: keyA.fingerprint,
      });
      expect(stored.length).toBe(sealed.byteSize);
      const { bytes, error } = await drain(await open(storage, key, keyA, { expectedSha256: sealed.sha256 }));
      expect(error).toBeUndefined();
      expect(bytes.equals(data)).toBe(true);
    },
  );

  it("gives every restore point its own data key (same plaintext, unrelated ciphertext)", async () => {
    const data = Buffer.alloc(CHUNK, 7);
    const first = await sealBytes(data);
    const second = await sealBytes(data);
    const a = await readFile(fileOf(first.key));
    const b = await readFile(fileOf(second.key));
    expect(a.subarray(32).equals(b.subarray(32))).toBe(false);
    const headerA = await readFile(fileOf(first.key) + SEAL_HEADER_SUFFIX);
    const headerB = await readFile(fileOf(second.key) + SEAL_HEADER_SUFFIX);
    expect(headerA.subarray(84, 116).equals(headerB.subarray(84, 116))).toBe(false);
  });

  it("never yields a byte of a chunk whose bits were flipped; earlier chunks were authenticated", async () => {
    const data = randomBytes(4 * CHUNK);
    const { key } = await sealBytes(data);
    await flipByte(fileOf(key), 32 + 2 * (CHUNK + 16) + 100); // inside chunk 2
    const { bytes, error } = await drain(await open(storage, key, keyA));
    expect(error?.code).toBe("RECLAIM_ERR_SEAL_TAMPERED");
    expect(error?.permanent).toBe(true);
    // What reached the consumer before the error is a prefix of chunks 0-1 (the stream may
    // drop some of those on error), never a byte of chunk 2.
    expect(bytes.length).toBeLessThanOrEqual(2 * CHUNK);
    expect(bytes.equals(data.subarray(0, bytes.length))).toBe(true);
  });

  it("refuses reordered chunks before yielding anything", async () => {
    const data = randomBytes(3 * CHUNK);
    const { key } = await sealBytes(data);
    const stored = await readFile(fileOf(key));
    const size = CHUNK + 16;
    const swapped = Buffer.concat([
      stored.subarray(0, 32),
      stored.subarray(32 + size, 32 + 2 * size),
      stored.subarray(32, 32 + size),
      stored.subarray(32 + 2 * size),
    ]);
    await writeFile(fileOf(key), swapped);
    const { bytes, error } = await drain(await open(storage, key, keyA));
    expect(error?.code).toBe("RECLAIM_ERR_SEAL_TAMPERED");
    expect(bytes.length).toBe(0);
  });

  it.each([
    ["at a chunk boundary", (n: number) => 32 + 2 * (CHUNK + 16) + 0 * n],
    ["inside a chunk", (n: number) => n - 100],
  ])("reports a payload cut %s as truncated, after only authenticated bytes", async (_where, cut) => {
    const data = randomBytes(3 * CHUNK + 5);
    const { key } = await sealBytes(data);
    const stored = await readFile(fileOf(key));
    await writeFile(fileOf(key), stored.subarray(0, cut(stored.length)));
    const { bytes, error } = await drain(await open(storage, key, keyA));
    expect(error?.code).toBe("RECLAIM_ERR_SEAL_TRUNCATED");
    expect(data.subarray(0, bytes.length).equals(bytes)).toBe(true);
    expect(bytes.length % CHUNK).toBe(0);
  });

  it("detects a dropped final chunk by its flag even when the header's length agrees", async () => {
    // Seal 3 chunks, then keep chunks 0-1 and relabel nothing: the last kept chunk is not final.
    const data = randomBytes(2 * CHUNK);
    const { key } = await sealBytes(Buffer.concat([data, randomBytes(CHUNK)]));
    const two = await sealBytes(data);
    const stored = await readFile(fileOf(key));
    // Graft the 2-chunk header (length 2*CHUNK) onto the first two chunks of the 3-chunk payload.
    await writeFile(
      fileOf(two.key),
      Buffer.concat([
        (await readFile(fileOf(two.key))).subarray(0, 32),
        stored.subarray(32, 32 + 2 * (CHUNK + 16)),
      ]),
    );
    const { error } = await drain(await open(storage, two.key, keyA));
    expect(error?.code).toBe("RECLAIM_ERR_SEAL_TAMPERED");
  });

  it("refuses appended bytes", async () => {
    const { key } = await sealBytes(randomBytes(CHUNK));
    await writeFile(fileOf(key), Buffer.concat([await readFile(fileOf(key)), Buffer.alloc(16)]));
    expect((await drain(await open(storage, key, keyA))).error?.code).toBe("RECLAIM_ERR_SEAL_TAMPERED");
  });

  it("refuses another instance key before reading the payload", async () => {
    const { key } = await sealBytes(randomBytes(100));
    const error = await rejectionOf(open(storage, key, keyB));
    expect(error.code).toBe("RECLAIM_ERR_SEAL_WRONG_KEY");
    expect(error.message).toContain(keyA.fingerprint.slice(0, 12));
  });

  it("refuses a header whose fields were changed, even with the right key", async () => {
    const { key } = await sealBytes(randomBytes(100));
    await flipByte(fileOf(key) + SEAL_HEADER_SUFFIX, 39); // plaintextSize
    expect((await rejectionOf(open(storage, key, keyA))).code).toBe("RECLAIM_ERR_SEAL_TAMPERED");
  });

  it("refuses the payload of another restore point under this header", async () => {
    const data = randomBytes(CHUNK);
    const one = await sealBytes(data);
    const other = await sealBytes(data);
    await writeFile(fileOf(one.key), await readFile(fileOf(other.key)));
    expect((await drain(await open(storage, one.key, keyA))).error?.code).toBe("RECLAIM_ERR_SEAL_TAMPERED");
  });

  it.each([
    ["header", SEAL_HEADER_SUFFIX],
    ["payload", ""],
  ])("refuses an unknown format version in the %s instead of guessing", async (_which, suffix) => {
    const { key } = await sealBytes(randomBytes(100));
    const file = fileOf(key) + suffix;
    const bytes = await readFile(file);
    bytes.writeUInt16BE(2, 8);
    await writeFile(file, bytes);
    const error = suffix
      ? await rejectionOf(open(storage, key, keyA))
      : (await drain(await open(storage, key, keyA))).error;
    expect(error?.code).toBe("RECLAIM_ERR_SEAL_UNKNOWN_VERSION");
  });

  it("fails at the end when the stored payload differs from the ledger's hash", async () => {
    const { key } = await sealBytes(randomBytes(CHUNK * 2));
    const { bytes, error } = await drain(await open(storage, key, keyA, { expectedSha256: "0".repeat(64) }));
    expect(error?.code).toBe("RECLAIM_ERR_SEAL_HASH_MISMATCH");
    expect(bytes.length).toBeLessThan(CHUNK * 2); // the final chunk is never released
  });

  it("refuses a plaintext shorter or longer than declared and leaves nothing stored", async () => {
    for (const [actual, declared] of [
      [100, 101],
      [CHUNK * 2 + 1, CHUNK * 2],
    ] as const) {
      const key = newKey();
      const error = await rejectionOf(
        seal(Readable.from([randomBytes(actual)]), {
          instanceKey: keyA,
          storage,
          storageKey: key,
          plaintextSize: declared,
          chunkSize: CHUNK,
        }),
      );
      expect(error.code).toBe("RECLAIM_ERR_SEAL_LENGTH_MISMATCH");
      expect(await storage.head(key)).toBeNull();
      expect(await storage.head(key.withSuffix(SEAL_HEADER_SUFFIX))).toBeNull();
    }
  });
});

describe("rewrap (instance key rotation)", () => {
  it("re-wraps the data key without touching the payload", async () => {
    const data = randomBytes(3 * CHUNK);
    const { key, sealed } = await sealBytes(data);
    const before = await readFile(fileOf(key));
    expect(await rewrap(storage, key, { from: keyA, to: keyB })).toEqual({
      keyFingerprint: keyB.fingerprint,
    });
    expect((await readFile(fileOf(key))).equals(before)).toBe(true);
    expect((await rejectionOf(open(storage, key, keyA))).code).toBe("RECLAIM_ERR_SEAL_WRONG_KEY");
    const { bytes, error } = await drain(await open(storage, key, keyB, { expectedSha256: sealed.sha256 }));
    expect(error).toBeUndefined();
    expect(bytes.equals(data)).toBe(true);
  });

  it("is idempotent, so an interrupted rotation can run again", async () => {
    const { key } = await sealBytes(randomBytes(10));
    await rewrap(storage, key, { from: keyA, to: keyB });
    const header = await readFile(fileOf(key) + SEAL_HEADER_SUFFIX);
    await rewrap(storage, key, { from: keyA, to: keyB });
    expect((await readFile(fileOf(key) + SEAL_HEADER_SUFFIX)).equals(header)).toBe(true);
  });

  it("refuses to rotate from a key that does not wrap the object", async () => {
    const { key } = await sealBytes(randomBytes(10));
    expect((await rejectionOf(rewrap(storage, key, { from: keyB, to: instanceKey() }))).code).toBe(
      "RECLAIM_ERR_SEAL_WRONG_KEY",
    );
  });
});

describe("deleteSealed", () => {
  it("removes payload and header, idempotently", async () => {
    const { key } = await sealBytes(randomBytes(10));
    await deleteSealed(storage, key);
    await deleteSealed(storage, key);
    expect(await storage.head(key)).toBeNull();
    expect(await storage.head(key.withSuffix(SEAL_HEADER_SUFFIX))).toBeNull();
  });
});

it("decodes keys the way Paperclip does", () => {
  const raw = randomBytes(32);
  expect(decodeInstanceKey(raw.toString("hex"))?.equals(raw)).toBe(true);
  expect(decodeInstanceKey(raw.toString("base64"))?.equals(raw)).toBe(true);
  expect(decodeInstanceKey("a".repeat(32))?.toString()).toBe("a".repeat(32));
  expect(decodeInstanceKey("too short")).toBeNull();
});
