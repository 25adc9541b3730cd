/**
 * Rules: a target that already matches is only reported (`already_applied`); a diverged
 * target is never overwritten (fails closed, retryable, untouched); a missing, truncated,
 * tampered or wrong-key payload fails closed with the seal's error code and leaves the target
 * untouched; an existing ignored file is never overwritten; an unknown schema is refused.
 */
import { createHash, randomUUID } from "node:crypto";
import { open as openFile, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { applyPayload, open, parseManifest, seal, StorageKey } from "../../src";
import { cleanup, clone, git, tempDir } from "./fixture";
import { applyStored, busyWorktree, captureAndStore, localStorage, makeKey, repoFacts } from "./round-trip";

afterAll(cleanup);
const key = makeKey();

async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const item of await readdir(path.join(dir, rel), { withFileTypes: true })) {
      const child = path.join(rel, item.name);
      if (item.isDirectory()) await walk(child);
      else out.push(child);
    }
  };
  await walk("");
  return out.sort();
}

/** Everything about a target an apply could change. */
async function targetState(dir: string): Promise<unknown> {
  const hash = async (file: string) =>
    readFile(path.join(dir, ".git", file)).then(
      (b) => createHash("sha256").update(b).digest("hex"),
      () => "absent",
    );
  return {
    facts: await repoFacts(dir),
    refs: await git(dir, ["for-each-ref"]),
    gitFiles: await listTree(path.join(dir, ".git")),
    index: await hash("index"),
    headLog: await hash("logs/HEAD"),
    countObjects: await git(dir, ["count-objects", "-v"]),
  };
}

async function setup() {
  const root = await tempDir();
  const { work, remote } = await busyWorktree(root);
  const storage = localStorage(path.join(root, "storage"));
  const stored = await captureAndStore(work, storage, key);
  const fresh = await clone(remote, path.join(root, "fresh"));
  const payloadFile = path.join(root, "storage", ...stored.storageKey.path.split("/"));
  return { root, work, remote, storage, stored, fresh, payloadFile };
}

describe("applyPayload", () => {
  it("fails closed on a diverged target (a local commit no remote has) and leaves it untouched", async () => {
    const { storage, stored, fresh } = await setup();
    await git(fresh, ["commit", "-q", "--allow-empty", "-m", "work only here"]);
    const before = await targetState(fresh);
    await expect(applyStored(fresh, storage, key, stored)).rejects.toMatchObject({
      code: "RECLAIM_ERR_GIT_APPLY_DIVERGED",
      permanent: false,
    });
    expect(await targetState(fresh)).toEqual(before);
  });

  it("fails closed on a target with local changes and leaves it untouched", async () => {
    const { storage, stored, fresh } = await setup();
    await writeFile(path.join(fresh, "b.txt"), "edited in the target\n");
    await writeFile(path.join(fresh, "new.txt"), "someone else's\n");
    const before = await targetState(fresh);
    await expect(applyStored(fresh, storage, key, stored)).rejects.toMatchObject({
      code: "RECLAIM_ERR_GIT_APPLY_DIVERGED",
    });
    expect(await targetState(fresh)).toEqual(before);
  });

  it("fails closed on a truncated payload with the seal's code, target untouched", async () => {
    const { storage, stored, fresh, payloadFile } = await setup();
    const size = (await stat(payloadFile)).size;
    const handle = await openFile(payloadFile, "r+");
    await handle.truncate(size - 100);
    await handle.close();
    const before = await targetState(fresh);
    await expect(applyStored(fresh, storage, key, stored)).rejects.toMatchObject({
      code: "RECLAIM_ERR_SEAL_TRUNCATED",
    });
    expect(await targetState(fresh)).toEqual(before);
  });

  it("fails closed on a flipped byte with the seal's code, target untouched", async () => {
    const { storage, stored, fresh, payloadFile } = await setup();
    const bytes = await readFile(payloadFile);
    bytes[Math.floor(bytes.length / 2)]! ^= 0x01;
    await writeFile(payloadFile, bytes);
    const before = await targetState(fresh);
    await expect(applyStored(fresh, storage, key, stored)).rejects.toMatchObject({
      code: "RECLAIM_ERR_SEAL_TAMPERED",
    });
    expect(await targetState(fresh)).toEqual(before);
  });

  it("fails closed on a wrong instance key and on a missing payload, target untouched", async () => {
    const { storage, stored, fresh } = await setup();
    const before = await targetState(fresh);
    await expect(applyStored(fresh, storage, makeKey(), stored)).rejects.toMatchObject({
      code: "RECLAIM_ERR_SEAL_WRONG_KEY",
    });
    const missing = { ...stored, storageKey: StorageKey.of(randomUUID(), "git-restore-points/none/payload") };
    await expect(applyStored(fresh, storage, key, missing)).rejects.toMatchObject({
      code: expect.stringMatching(/^RECLAIM_ERR_(STORAGE_NOT_FOUND|SEAL_)/),
    });
    expect(await targetState(fresh)).toEqual(before);
  });

  it("refuses a payload that is not the manifest's, target untouched", async () => {
    const { storage, stored, fresh } = await setup();
    const other = { ...stored.manifest, tracked: { ...stored.manifest.tracked, treeDigest: "0".repeat(64) } };
    const before = await targetState(fresh);
    await expect(
      applyPayload(fresh, () => open(storage, stored.storageKey, key), other),
    ).rejects.toMatchObject({
      code: "RECLAIM_ERR_GIT_PAYLOAD_INVALID",
    });
    expect(await targetState(fresh)).toEqual(before);
  });

  it("refuses a payload of a schema it does not know (schema byte 1), target untouched", async () => {
    const { storage, stored, fresh } = await setup();
    const plaintext = await buffer(await open(storage, stored.storageKey, key));
    expect(plaintext.subarray(0, 8).toString("latin1")).toBe("RCLGITP\x02");
    plaintext[7] = 0x01;
    const storageKey = StorageKey.of(randomUUID(), `git-restore-points/ws/${randomUUID()}/payload`);
    await seal(Readable.from([plaintext]), {
      instanceKey: key,
      storage,
      storageKey,
      plaintextSize: plaintext.length,
    });
    const before = await targetState(fresh);
    await expect(applyStored(fresh, storage, key, { ...stored, storageKey })).rejects.toMatchObject({
      code: "RECLAIM_ERR_GIT_PAYLOAD_SCHEMA",
    });
    expect(await targetState(fresh)).toEqual(before);
  });

  it("refuses a manifest schema it does not know", () => {
    expect(() => parseManifest(JSON.stringify({ schema: "reclaim.git-restore-point.v1" }))).toThrow(
      expect.objectContaining({ code: "RECLAIM_ERR_GIT_PAYLOAD_SCHEMA" }),
    );
  });

  it("never overwrites an ignored file that already exists in the target", async () => {
    const { work, storage, stored, fresh } = await setup();
    // provisioning left an ignored file (ignored by the target's own exclude rules)
    await writeFile(path.join(fresh, ".git", "info", "exclude"), "*.log\n");
    await writeFile(path.join(fresh, "kept.log"), "the target's own\n");
    const result = await applyStored(fresh, storage, key, stored);
    expect(result).toEqual({ status: "applied", keptIgnored: ["kept.log"] });
    await expect(readFile(path.join(fresh, "kept.log"), "utf8")).resolves.toBe("the target's own\n");
    const restored = await repoFacts(fresh);
    const original = await repoFacts(work);
    expect({ ...restored, files: [] }).toEqual({ ...original, files: [] });
  });

  it("fails closed when the target lacks the bundle's base", async () => {
    const { root, storage, stored, remote } = await setup();
    // a clone of a rewritten remote: the base commit is gone
    const other = path.join(root, "other-remote.git");
    await git(root, ["init", "-q", "--bare", "-b", "main", other]);
    const seed = path.join(root, "seed2");
    await git(root, ["init", "-q", "-b", "main", seed]);
    await writeFile(path.join(seed, "z.txt"), "z\n");
    await git(seed, ["add", "-A"]);
    await git(seed, ["commit", "-q", "-m", "unrelated"]);
    await git(seed, ["push", "-q", other, "main"]);
    void remote;
    const target = path.join(root, "unrelated");
    await git(root, ["clone", "-q", other, target]);
    const before = await targetState(target);
    await expect(applyStored(target, storage, key, stored)).rejects.toMatchObject({
      code: expect.stringMatching(/RECLAIM_ERR_GIT_APPLY_(BASE_MISSING|DIVERGED)/),
    });
    expect(await targetState(target)).toEqual(before);
  });
});
