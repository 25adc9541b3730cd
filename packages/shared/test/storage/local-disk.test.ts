import { randomUUID } from "node:crypto";
import { mkdtemp, readdir, rm, stat, symlink, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { createLocalDiskProvider, StorageKey } from "../../src";
import { rejection, storageContract } from "./storage-contract";

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
});
