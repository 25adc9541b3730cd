import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, open, readdir, rm, stat, symlink, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { createLocalDiskProvider, StorageKey } from "../../src";
import { readAll, rejection, storageContract } from "./storage-contract";

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "reclaim-local-disk-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("local_disk provider contract", () => {
  storageContract({ provider: () => createLocalDiskProvider({ baseDir: path.join(root, "contract") }) });
});

describe("local_disk layout", () => {
  it("creates files 0600 and directories 0700 under companies/<companyId>/", async () => {
    const base = path.join(root, "modes");
    const storage = createLocalDiskProvider({ baseDir: base });
    const company = randomUUID();
    await storage.put(StorageKey.of(company, "a/b/object"), Readable.from([Buffer.from("x")]), 1);
    const file = path.join(base, "companies", company, "a", "b", "object");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    for (const dir of [
      "companies",
      `companies/${company}`,
      `companies/${company}/a`,
      `companies/${company}/a/b`,
    ]) {
      expect((await stat(path.join(base, dir))).mode & 0o777).toBe(0o700);
    }
  });

  it("leaves no temporary file after a successful or a failed put", async () => {
    const base = path.join(root, "temps");
    const storage = createLocalDiskProvider({ baseDir: base });
    const company = randomUUID();
    await storage.put(StorageKey.of(company, "dir/ok"), Readable.from([Buffer.from("ok")]), 2);
    await rejection(storage.put(StorageKey.of(company, "dir/short"), Readable.from([Buffer.from("x")]), 2));
    expect(await readdir(path.join(base, "companies", company, "dir"))).toEqual(["ok"]);
  });

  it("refuses to follow a link planted inside the tree to a directory outside it", async () => {
    const base = path.join(root, "links");
    const outside = path.join(root, "outside");
    await mkdir(outside, { recursive: true });
    const company = randomUUID();
    await mkdir(path.join(base, "companies", company), { recursive: true });
    await symlink(outside, path.join(base, "companies", company, "escape"));
    const storage = createLocalDiskProvider({ baseDir: base });
    const error = await rejection(
      storage.put(StorageKey.of(company, "escape/file"), Readable.from([Buffer.from("x")]), 1),
    );
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_KEY_INVALID");
    expect(await readdir(outside)).toEqual([]);
  });
  it("refuses a nested key through a planted link before creating anything beyond it", async () => {
    const base = path.join(root, "nested-links");
    const outside = path.join(root, "nested-outside");
    await mkdir(outside, { recursive: true });
    const company = randomUUID();
    await mkdir(path.join(base, "companies", company), { recursive: true });
    await symlink(outside, path.join(base, "companies", company, "escape"));
    const storage = createLocalDiskProvider({ baseDir: base });
    const error = await rejection(
      storage.put(StorageKey.of(company, "escape/a/b/file"), Readable.from([Buffer.from("x")]), 1),
    );
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_KEY_INVALID");
    // Not even the first level under the link (`a`) was made on the far side of it.
    expect(await readdir(outside)).toEqual([]);
    for (const read of [
      () => storage.get(StorageKey.of(company, "escape/a/b/file")),
      () => storage.head(StorageKey.of(company, "escape/a/b/file")),
    ])
      expect((await rejection(read())).code).toBe("RECLAIM_ERR_STORAGE_KEY_INVALID");
  });

  it("refuses a link planted at the companies level, whatever the key", async () => {
    const base = path.join(root, "top-link");
    const outside = path.join(root, "top-outside");
    await mkdir(outside, { recursive: true });
    await mkdir(base, { recursive: true });
    await symlink(outside, path.join(base, "companies"));
    const storage = createLocalDiskProvider({ baseDir: base });
    const error = await rejection(
      storage.put(StorageKey.of(randomUUID(), "a/file"), Readable.from([Buffer.from("x")]), 1),
    );
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_KEY_INVALID");
    expect(await readdir(outside)).toEqual([]);
  });
});

describe("local_disk durability and verification", () => {
  it("fsyncs every directory it creates into its parent, the object, and the object's directory", async () => {
    const base = path.join(root, "durable");
    const synced: string[] = [];
    const storage = createLocalDiskProvider({ baseDir: base, testHooks: { onFsync: (p) => synced.push(p) } });
    const company = randomUUID();
    await storage.put(StorageKey.of(company, "a/b/object"), Readable.from([Buffer.from("x")]), 1);
    const dirs = [base, "companies", company, "a", "b"].reduce<string[]>(
      (all, name) => [...all, all.length ? path.join(all[all.length - 1]!, name) : name],
      [],
    );
    // Each new level is fsynced into its parent (root held the new base), top down; then the
    // temporary file; then the directory that holds the renamed object.
    expect(synced).toEqual([
      root,
      ...dirs.slice(0, -1),
      expect.stringMatching(/\/\.reclaim-tmp-[0-9a-f-]+$/),
      dirs[dirs.length - 1],
    ]);
    synced.length = 0;
    await storage.put(StorageKey.of(company, "a/b/second"), Readable.from([Buffer.from("y")]), 1);
    expect(synced).toEqual([expect.stringMatching(/\/\.reclaim-tmp-[0-9a-f-]+$/), dirs[dirs.length - 1]]);
  });

  it.each([
    ["a small object", 1024, 100],
    ["a large object, in a later region than the first", 20 * 1024 * 1024, 17 * 1024 * 1024 + 5],
    ["an object hashed on a worker thread, in its last region", 40 * 1024 * 1024, 40 * 1024 * 1024 - 3],
  ])(
    "reports nothing stored when the bytes read back differ from what was sent (%s)",
    async (_case, size, corruptAt) => {
      const base = path.join(root, `mismatch-${size}`);
      const company = randomUUID();
      const key = StorageKey.of(company, "dir/object");
      const previous = randomBytes(64);
      await createLocalDiskProvider({ baseDir: base }).put(key, Readable.from([previous]), previous.length);
      const storage = createLocalDiskProvider({
        baseDir: base,
        testHooks: {
          // The disk returns other bytes than were written: flip one, once it is durable.
          beforeReadBack: async (temp, offset, length) => {
            if (corruptAt < offset || corruptAt >= offset + length) return;
            const handle = await open(temp, "r+");
            const byte = Buffer.alloc(1);
            await handle.read(byte, 0, 1, corruptAt);
            byte[0] = byte[0]! ^ 0xff;
            await handle.write(byte, 0, 1, corruptAt);
            await handle.close();
          },
        },
      });
      const sent = randomBytes(size);
      const pieces = Array.from({ length: Math.ceil(size / 65536) }, (_, i) =>
        sent.subarray(i * 65536, (i + 1) * 65536),
      );
      const error = await rejection(storage.put(key, Readable.from(pieces), size));
      expect(error.code).toBe("RECLAIM_ERR_STORAGE_VERIFY_FAILED");
      expect(error.permanent).toBe(false);
      // The previous object is still the one stored, and no temporary file is left.
      expect((await readAll(await storage.get(key))).equals(previous)).toBe(true);
      expect(await readdir(path.join(base, "companies", company, "dir"))).toEqual(["object"]);
    },
  );

  it("removes the partial temporary file when the body fails after several regions", async () => {
    const base = path.join(root, "partial");
    const company = randomUUID();
    const storage = createLocalDiskProvider({ baseDir: base });
    const size = 32 * 1024 * 1024;
    async function* failing(): AsyncGenerator<Buffer> {
      for (let sent = 0; sent < 20 * 1024 * 1024; sent += 1024 * 1024) yield randomBytes(1024 * 1024);
      throw new Error("the source broke");
    }
    await rejection(storage.put(StorageKey.of(company, "dir/object"), Readable.from(failing()), size));
    expect(await readdir(path.join(base, "companies", company, "dir"))).toEqual([]);
    expect(await storage.head(StorageKey.of(company, "dir/object"))).toBeNull();
  });
});
