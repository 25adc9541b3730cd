/**
 * The s3 provider against a real S3 implementation: the Ceph RADOS Gateway that the Jest
 * global setup starts (scripts/s3-rgw.sh). Signatures are checked and multipart is real.
 */
import { randomBytes, randomUUID } from "node:crypto";
import net from "node:net";
import { Readable } from "node:stream";
import { createTestBucket, type TestBucket } from "@reclaim/testkit";
import {
  createS3Provider,
  fingerprintOf,
  open,
  rewrap,
  seal,
  deleteSealed,
  StorageKey,
  type S3Options,
} from "../../src";
import { readAll, rejection, sha256, storageContract } from "./storage-contract";

let bucket: TestBucket;
let options: S3Options;

beforeAll(async () => {
  bucket = await createTestBucket();
  options = {
    bucket: bucket.name,
    endpoint: bucket.server.endpoint,
    region: bucket.server.region,
    forcePathStyle: true,
    prefix: "reclaim-tests/",
    accessKeyId: bucket.server.accessKey,
    secretAccessKey: bucket.server.secretKey,
    partSize: 5 * 1024 * 1024,
  };
});
afterAll(async () => {
  await bucket?.remove();
});

describe("s3 provider contract (Ceph RGW)", () => {
  storageContract({ provider: () => createS3Provider(options) });
});

describe("s3 provider against Ceph RGW", () => {
  const company = randomUUID();

  it("uploads a multipart-size object in parts and reads back the same bytes", async () => {
    const storage = createS3Provider({ ...options, partSize: 16 * 1024 * 1024 });
    const data = randomBytes(70 * 1024 * 1024);
    const key = StorageKey.of(company, "multipart/object");
    const pieces = Array.from({ length: 70 }, (_, i) =>
      data.subarray(i * 1024 * 1024, (i + 1) * 1024 * 1024),
    );
    const stored = await storage.put(key, Readable.from(pieces), data.length);
    expect(stored.sha256).toBe(sha256(data));
    const stat = await bucket.client.statObject(bucket.name, `reclaim-tests/${key.path}`);
    expect(stat.etag).toMatch(/-5$/); // five parts: 4 x 16 MiB + 6 MiB
    expect(
      (await readAll(await storage.get(key, { range: { offset: 50 * 1024 * 1024, length: 10 } }))).equals(
        data.subarray(50 * 1024 * 1024, 50 * 1024 * 1024 + 10),
      ),
    ).toBe(true);
    await storage.delete(key);
  });

  it("aborts a multipart upload whose body fails, leaving no parts or object", async () => {
    const storage = createS3Provider(options);
    const key = StorageKey.of(company, "multipart/broken");
    const error = await rejection(
      storage.put(key, Readable.from([randomBytes(12 * 1024 * 1024)]), 20 * 1024 * 1024),
    );
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_LENGTH_MISMATCH");
    expect(await storage.head(key)).toBeNull();
    const uploads = [];
    for await (const upload of bucket.client.listIncompleteUploads(bucket.name, "reclaim-tests/", true))
      uploads.push(upload);
    expect(uploads).toEqual([]);
  });

  it("refuses a wrong secret as a permanent access-denied error and stores nothing", async () => {
    const storage = createS3Provider({ ...options, secretAccessKey: "not-the-secret" });
    const key = StorageKey.of(company, "denied/object");
    const error = await rejection(storage.put(key, Readable.from([Buffer.from("secret work")]), 11));
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_ACCESS_DENIED");
    expect(error.permanent).toBe(true);
    expect(await createS3Provider(options).head(key)).toBeNull();
    expect((await rejection(storage.head(key))).code).toBe("RECLAIM_ERR_STORAGE_ACCESS_DENIED");
  });

  it("reports a server that is down as retryable unavailability, with nothing stored", async () => {
    const port = await closedPort();
    const storage = createS3Provider({ ...options, endpoint: `http://127.0.0.1:${port}` });
    const key = StorageKey.of(company, "down/object");
    const error = await rejection(storage.put(key, Readable.from([Buffer.from("work")]), 4));
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_UNAVAILABLE");
    expect(error.permanent).toBe(false);
    expect(error.message).toContain("ECONNREFUSED");
    expect(await createS3Provider(options).head(key)).toBeNull();
  });
});

describe("sealing on s3 (Ceph RGW)", () => {
  it("seals, opens, rotates and deletes a restore point on a real S3 server", async () => {
    const storage = createS3Provider(options);
    const keyOf = () => {
      const key = randomBytes(32);
      return { key, fingerprint: fingerprintOf(key), source: "env" as const };
    };
    const [oldKey, newKey] = [keyOf(), keyOf()];
    const data = randomBytes(7 * 1024 * 1024 + 3);
    const key = StorageKey.of(randomUUID(), "git-restore-points/ws/1/bundle");
    const sealed = await seal(Readable.from([data]), {
      instanceKey: oldKey,
      storage,
      storageKey: key,
      plaintextSize: data.length,
    });
    expect(sealed.keyFingerprint).toBe(oldKey.fingerprint);
    await rewrap(storage, key, { from: oldKey, to: newKey });
    const opened = await readAll(await open(storage, key, newKey, { expectedSha256: sealed.sha256 }));
    expect(opened.equals(data)).toBe(true);
    await deleteSealed(storage, key);
    expect(await storage.head(key)).toBeNull();
  });
});

describe("s3 provider against a server that stops answering", () => {
  const company = randomUUID();
  it("fails a request that gets no byte within the idle limit as retryable unavailability", async () => {
    // Accepts connections and reads requests, never answers: how a full Ceph OSD behaves.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => {
      sockets.push(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = silent.address() as net.AddressInfo;
      const storage = createS3Provider({
        ...options,
        endpoint: `http://127.0.0.1:${port}`,
        requestIdleTimeoutMs: 200,
      });
      const error = await rejection(
        storage.put(StorageKey.of(company, "silent/object"), Readable.from([Buffer.from("work")]), 4),
      );
      expect(error.code).toBe("RECLAIM_ERR_STORAGE_UNAVAILABLE");
      expect(error.message).toContain("ETIMEDOUT");
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

/** A loopback port nothing listens on: bound once by us, then closed. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
