/**
 * The contract every StorageProvider keeps (see src/storage/provider.ts), run by
 * local-disk.test.ts and s3-rgw.test.ts against the real thing.
 */
import { randomBytes, createHash, randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { StorageError, StorageKey, type StorageProvider } from "../../src";
import { rejectionOf } from "../rejection";

export interface ContractSubject {
  provider(): StorageProvider;
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

/** A stream that yields `data` in small pieces, then fails instead of ending. */
function failingAfter(data: Buffer): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(data);
      } else {
        this.destroy(new Error("source disk went away"));
      }
    },
  });
}

export function storageContract(subject: ContractSubject): void {
  const company = randomUUID();
  const key = (name: string): StorageKey => StorageKey.of(company, `contract/${randomUUID()}/${name}`);

  it("stores exactly the bytes sent and reports their SHA-256 and size", async () => {
    const storage = subject.provider();
    const data = randomBytes(300_000);
    const k = key("object");
    const stored = await storage.put(
      k,
      Readable.from([data.subarray(0, 1000), data.subarray(1000)]),
      data.length,
    );
    expect(stored).toEqual({ key: k, byteSize: data.length, sha256: sha256(data) });
    expect((await readAll(await storage.get(k))).equals(data)).toBe(true);
    expect(await storage.head(k)).toEqual({ byteSize: data.length });
  });

  it("stores and reads an empty object", async () => {
    const storage = subject.provider();
    const k = key("empty");
    const stored = await storage.put(k, Readable.from([]), 0);
    expect(stored.byteSize).toBe(0);
    expect(stored.sha256).toBe(sha256(Buffer.alloc(0)));
    expect((await readAll(await storage.get(k))).length).toBe(0);
  });

  it("reads a byte range, cut at the end of the object", async () => {
    const storage = subject.provider();
    const data = randomBytes(10_000);
    const k = key("ranged");
    await storage.put(k, Readable.from([data]), data.length);
    expect(
      (await readAll(await storage.get(k, { range: { offset: 123, length: 456 } }))).equals(
        data.subarray(123, 579),
      ),
    ).toBe(true);
    expect(
      (await readAll(await storage.get(k, { range: { offset: 9_990, length: 100 } }))).equals(
        data.subarray(9_990),
      ),
    ).toBe(true);
    expect((await rejection(storage.get(k, { range: { offset: 10_000, length: 1 } }))).code).toBe(
      "RECLAIM_ERR_STORAGE_RANGE_INVALID",
    );
    expect((await rejection(storage.get(k, { range: { offset: -1, length: 1 } }))).code).toBe(
      "RECLAIM_ERR_STORAGE_RANGE_INVALID",
    );
  });

  it("replaces an existing object with a new put", async () => {
    const storage = subject.provider();
    const k = key("replaced");
    await storage.put(k, Readable.from([Buffer.from("first version")]), 13);
    await storage.put(k, Readable.from([Buffer.from("second")]), 6);
    expect((await readAll(await storage.get(k))).toString()).toBe("second");
  });

  it("reports a missing object as not found (get) or null (head)", async () => {
    const storage = subject.provider();
    const k = key("missing");
    expect(await storage.head(k)).toBeNull();
    const error = await rejection(storage.get(k));
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_NOT_FOUND");
    expect(error.permanent).toBe(true);
  });

  it("deletes idempotently and only resolves once the object is gone", async () => {
    const storage = subject.provider();
    const k = key("deleted");
    await storage.put(k, Readable.from([Buffer.from("bye")]), 3);
    await storage.delete(k);
    expect(await storage.head(k)).toBeNull();
    await storage.delete(k);
    await storage.delete(key("never-existed"));
  });

  it("refuses a body shorter than declared and stores nothing", async () => {
    const storage = subject.provider();
    const k = key("short");
    const error = await rejection(storage.put(k, Readable.from([Buffer.alloc(10)]), 11));
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_LENGTH_MISMATCH");
    expect(await storage.head(k)).toBeNull();
  });

  it("refuses a body longer than declared and stores nothing", async () => {
    const storage = subject.provider();
    const k = key("long");
    const error = await rejection(storage.put(k, Readable.from([Buffer.alloc(12)]), 11));
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_LENGTH_MISMATCH");
    expect(await storage.head(k)).toBeNull();
  });

  it("rejects when the body fails mid-upload and stores nothing", async () => {
    const storage = subject.provider();
    const k = key("broken-source");
    await expect(storage.put(k, failingAfter(Buffer.alloc(1000)), 5000)).rejects.toThrow();
    expect(await storage.head(k)).toBeNull();
  });

  it("keeps the same relative key of two companies apart", async () => {
    const storage = subject.provider();
    const relative = `contract/${randomUUID()}/shared-name`;
    const a = StorageKey.of(randomUUID(), relative);
    const b = StorageKey.of(randomUUID(), relative);
    await storage.put(a, Readable.from([Buffer.from("company a")]), 9);
    expect(await storage.head(b)).toBeNull();
    await storage.put(b, Readable.from([Buffer.from("company b")]), 9);
    expect((await readAll(await storage.get(a))).toString()).toBe("company a");
    await storage.delete(b);
    expect(await storage.head(a)).toEqual({ byteSize: 9 });
  });
}

export function rejection(promise: Promise<unknown>): Promise<StorageError> {
  return rejectionOf(promise, StorageError);
}
