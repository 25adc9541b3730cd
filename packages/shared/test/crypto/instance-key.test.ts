import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { assertRestorePointsAllowed, ConfigError, loadInstanceKey, SealError } from "../../src";
import { rejectionOf } from "../rejection";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "reclaim-key-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("loadInstanceKey", () => {
  it("takes PAPERCLIP_SECRETS_MASTER_KEY first and reports source env", async () => {
    const raw = randomBytes(32);
    const key = await loadInstanceKey({
      env: { PAPERCLIP_SECRETS_MASTER_KEY: ` ${raw.toString("hex")} ` },
      instanceRoot: root,
    });
    expect(key.key.equals(raw)).toBe(true);
    expect(key.source).toBe("env");
    expect(key.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it("refuses an invalid PAPERCLIP_SECRETS_MASTER_KEY, naming the variable but not the value", async () => {
    const error = await rejectionOf(
      loadInstanceKey({ env: { PAPERCLIP_SECRETS_MASTER_KEY: "hunter2" }, instanceRoot: root }),
    );
    expect(error).toBeInstanceOf(SealError);
    expect((error as SealError).code).toBe("RECLAIM_ERR_INSTANCE_KEY_INVALID");
    expect(error.message).toContain("PAPERCLIP_SECRETS_MASTER_KEY");
    expect(error.message).not.toContain("hunter2");
  });

  it("creates <instanceRoot>/secrets/master.key 0600 in a 0700 directory when missing, then reuses it", async () => {
    const first = await loadInstanceKey({ env: {}, instanceRoot: root });
    const file = path.join(root, "secrets", "master.key");
    expect(first).toMatchObject({ source: "file", keyFilePath: file });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(file))).mode & 0o777).toBe(0o700);
    expect(Buffer.from(await readFile(file, "utf8"), "base64").equals(first.key)).toBe(true);
    const again = await loadInstanceKey({ env: {}, instanceRoot: root });
    expect(again.key.equals(first.key)).toBe(true);
  });

  it("makes a new key file durable: the file, every directory it created, and its directory after the link", async () => {
    const synced: string[] = [];
    const file = path.join(root, "deep", "er", "master.key");
    await loadInstanceKey({
      env: { PAPERCLIP_SECRETS_MASTER_KEY_FILE: file },
      testHooks: { onFsync: (target) => synced.push(target) },
    });
    expect(synced).toEqual([
      root, // holds the new "deep"
      path.join(root, "deep"), // holds the new "er"
      expect.stringMatching(/\/deep\/er\/\.master\.key\.[0-9a-f-]+\.tmp$/), // the key, before the link
      path.join(root, "deep", "er"), // holds the link to it
    ]);
    // An existing key file is only read: nothing to make durable.
    synced.length = 0;
    await loadInstanceKey({
      env: { PAPERCLIP_SECRETS_MASTER_KEY_FILE: file },
      testHooks: { onFsync: (target) => synced.push(target) },
    });
    expect(synced).toEqual([]);
  });

  it("gives processes that create the key at the same time one and the same key", async () => {
    const keys = await Promise.all(
      Array.from({ length: 8 }, () => loadInstanceKey({ env: {}, instanceRoot: root })),
    );
    for (const key of keys) expect(key.fingerprint).toBe(keys[0]!.fingerprint);
  });

  it("uses PAPERCLIP_SECRETS_MASTER_KEY_FILE over the instance root and refuses a bad file", async () => {
    const file = path.join(root, "elsewhere", "k");
    await mkdir(path.dirname(file));
    const raw = randomBytes(32);
    await writeFile(file, raw.toString("base64") + "\n", { mode: 0o644 });
    const key = await loadInstanceKey({
      env: { PAPERCLIP_SECRETS_MASTER_KEY_FILE: file },
      instanceRoot: "/nonexistent",
    });
    expect(key.key.equals(raw)).toBe(true);
    expect((await stat(file)).mode & 0o777).toBe(0o600); // tightened, as Paperclip does
    await writeFile(file, "not a key");
    const error = await rejectionOf(loadInstanceKey({ env: { PAPERCLIP_SECRETS_MASTER_KEY_FILE: file } }));
    expect((error as SealError).code).toBe("RECLAIM_ERR_INSTANCE_KEY_INVALID");
  });

  it("needs an instance root or a key file variable when no key is set", async () => {
    const error = await rejectionOf(loadInstanceKey({ env: {} }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe("PAPERCLIP_SECRETS_MASTER_KEY_FILE");
  });
});

describe("assertRestorePointsAllowed", () => {
  it("refuses s3 storage with a key from a file, permanently", () => {
    let caught: unknown;
    try {
      assertRestorePointsAllowed("s3", "file");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SealError);
    expect((caught as SealError).code).toBe("RECLAIM_ERR_RESTORE_POINTS_REFUSED");
    expect((caught as SealError).permanent).toBe(true);
  });

  it("allows s3 with the env key and local_disk with either", () => {
    expect(() => assertRestorePointsAllowed("s3", "env")).not.toThrow();
    expect(() => assertRestorePointsAllowed("local_disk", "file")).not.toThrow();
    expect(() => assertRestorePointsAllowed("local_disk", "env")).not.toThrow();
  });
});
