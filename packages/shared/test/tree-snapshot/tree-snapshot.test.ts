import { execFileSync } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:net";
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
  utimes,
  writeFile,
} from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable, Transform } from "node:stream";
import {
  createLocalDiskProvider,
  digestTree,
  encodeSnapshot,
  excludeNodeModulesBesidePackageJson,
  fingerprintOf,
  open,
  planTree,
  restoreSnapshot,
  seal,
  SLICE_CALLS,
  StorageKey,
  TreeSnapshotError,
  validateSnapshot,
  type TreeSelection,
  type TreeSnapshotLimits,
  type TreeSnapshotReason,
} from "../../src";
import { turnsDuring } from "@reclaim/testkit";
import { rejectionOf } from "../rejection";

const limits: TreeSnapshotLimits = { maxFiles: 20_000, maxFileBytes: 64 << 20, maxTotalBytes: 256 << 20 };
const walk: TreeSelection = { kind: "walk", exclude: excludeNodeModulesBesidePackageJson };
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), "reclaim-tree-snapshot-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function freshDir(name = "t"): Promise<string> {
  const dir = path.join(scratch, `${name}-${randomUUID()}`);
  await mkdir(dir);
  return dir;
}

/** A tree with every kind of entry a snapshot keeps. */
async function richTree(): Promise<string> {
  const root = await freshDir("rich");
  await mkdir(path.join(root, "reports/2026"), { recursive: true });
  await writeFile(path.join(root, "reports/2026/summary.md"), "# Summary\n");
  await writeFile(path.join(root, "run.sh"), "#!/bin/sh\necho hi\n");
  await chmod(path.join(root, "run.sh"), 0o755);
  await writeFile(path.join(root, "secret.txt"), "s3cr3t");
  await chmod(path.join(root, "secret.txt"), 0o600);
  await writeFile(path.join(root, "empty"), "");
  await writeFile(path.join(root, "big.bin"), randomBytes(3 * 1024 * 1024 + 17));
  await writeFile(path.join(root, "ünïcødé ✓.txt"), "names are kept");
  await mkdir(path.join(root, "empty-dir"));
  await mkdir(path.join(root, "locked"));
  await writeFile(path.join(root, "locked/inside"), "x");
  await chmod(path.join(root, "locked"), 0o750);
  await symlink("reports/2026/summary.md", path.join(root, "relative-link"));
  await symlink("/etc/passwd", path.join(root, "absolute-link"));
  await symlink("does/not/exist", path.join(root, "dangling-link"));
  await symlink("reports", path.join(root, "dir-link"));
  await writeFile(path.join(root, "package.json"), "{}");
  await mkdir(path.join(root, "node_modules/left-pad"), { recursive: true });
  await writeFile(path.join(root, "node_modules/left-pad/index.js"), "module.exports = 1");
  await mkdir(path.join(root, "vendor/node_modules"), { recursive: true }); // no package.json beside it
  await writeFile(path.join(root, "vendor/node_modules/kept.js"), "kept");
  await utimes(
    path.join(root, "secret.txt"),
    new Date("2020-01-02T03:04:05Z"),
    new Date("2020-01-02T03:04:05Z"),
  );
  return root;
}

interface Seen {
  kind: string;
  mode: number;
  sha?: string;
  target?: string;
  mtimeMs?: number;
}

/** Everything below `root` as lstat sees it, never following a link. */
async function inventory(root: string): Promise<Map<string, Seen>> {
  const out = new Map<string, Seen>();
  const visit = async (rel: string): Promise<void> => {
    const full = rel === "" ? root : path.join(root, rel);
    const stat = await lstat(full);
    if (stat.isSymbolicLink()) {
      out.set(rel, { kind: "symlink", mode: 0, target: await readlink(full) });
    } else if (stat.isDirectory()) {
      out.set(rel, { kind: "directory", mode: stat.mode & 0o7777 });
      for (const name of (await readdir(full)).sort()) await visit(rel === "" ? name : `${rel}/${name}`);
    } else {
      const sha = createHash("sha256")
        .update(await readFile(full))
        .digest("hex");
      out.set(rel, { kind: "file", mode: stat.mode & 0o7777, sha, mtimeMs: Math.floor(stat.mtimeMs / 1000) });
    }
  };
  await visit("");
  return out;
}

async function snapshotBytes(root: string, selection: TreeSelection = walk): Promise<Buffer> {
  const plan = await planTree(root, { selection, limits });
  const { stream, summary } = encodeSnapshot(plan);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  await summary;
  const bytes = Buffer.concat(chunks);
  expect(bytes.length).toBe(plan.encodedSize);
  return bytes;
}

async function reasonOf(promise: Promise<unknown>): Promise<TreeSnapshotReason> {
  const error = await rejectionOf(promise, TreeSnapshotError);
  expect(error).toBeInstanceOf(TreeSnapshotError);
  return (error as TreeSnapshotError).reason;
}

describe("a snapshot keeps every file with its mode, every directory and every link as a link", () => {
  it("restores byte for byte: contents, modes, link targets, file times; node_modules beside package.json left out", async () => {
    const root = await richTree();
    const bytes = await snapshotBytes(root);
    const target = await freshDir("restored");
    const restored = await restoreSnapshot(Readable.from([bytes]), target, { limits });
    const before = await inventory(root);
    before.delete("node_modules");
    before.delete("node_modules/left-pad");
    before.delete("node_modules/left-pad/index.js");
    const after = await inventory(target);
    expect([...after.entries()]).toEqual([...before.entries()]);
    expect(after.get("vendor/node_modules/kept.js")?.kind).toBe("file");
    expect(after.get("secret.txt")?.mtimeMs).toBe(Date.parse("2020-01-02T03:04:05Z") / 1000);
    expect(after.get("locked")?.mode).toBe(0o750);
    expect(after.get("absolute-link")?.target).toBe("/etc/passwd");
    expect((await digestTree(target, { selection: walk, limits })).treeDigest).toBe(restored.treeDigest);
  });

  it("a plan counts the allocated bytes of what it holds and names what it left out: with the left-out trees, every byte of the tree", async () => {
    const root = await richTree();
    const plan = await planTree(root, { selection: walk, limits });
    expect(plan.excluded).toEqual(["node_modules"]);
    /** Allocated bytes of every entry below `at` (and `at`), never following a link. */
    const allocated = async (at: string): Promise<number> => {
      const stat = await lstat(at);
      let bytes = stat.blocks * 512;
      if (stat.isDirectory())
        for (const name of await readdir(at)) bytes += await allocated(path.join(at, name));
      return bytes;
    };
    expect(plan.allocatedBytes + (await allocated(path.join(root, "node_modules")))).toBe(
      await allocated(root),
    );
    expect(plan.allocatedBytes).toBeGreaterThan(3 * 1024 * 1024); // big.bin is held
  });

  it("writes the same bytes for the same tree, and the digest of a live tree matches its snapshot", async () => {
    const root = await richTree();
    const a = await snapshotBytes(root);
    const b = await snapshotBytes(root);
    expect(a.equals(b)).toBe(true);
    const summary = await validateSnapshot(Readable.from([a]), { limits });
    expect((await digestTree(root, { selection: walk, limits })).treeDigest).toBe(summary.treeDigest);
  });

  it("streams in chunks of at most 1 MiB (constant memory) and seals and opens through storage", async () => {
    const root = await richTree();
    const plan = await planTree(root, { selection: walk, limits });
    const storage = createLocalDiskProvider({ baseDir: await freshDir("storage") });
    const { stream: encoded, summary } = encodeSnapshot(plan);
    // Each chunk measured on its way to seal: a "data" listener on the stream itself would set
    // it flowing before seal reads it, and what flowed meanwhile would never reach seal.
    let largest = 0;
    const stream = encoded.pipe(
      new Transform({
        transform(chunk: Buffer, _encoding, done) {
          largest = Math.max(largest, chunk.length);
          done(null, chunk);
        },
      }),
    );
    const key = randomBytes(32);
    const instanceKey = { key, fingerprint: fingerprintOf(key), source: "env" as const };
    const storageKey = StorageKey.of(
      randomUUID(),
      `git-restore-points/${randomUUID()}/1/task-directory/snapshot`,
    );
    const sealed = await seal(stream, { instanceKey, storage, storageKey, plaintextSize: plan.encodedSize });
    const { treeDigest } = await summary;
    expect(largest).toBeLessThanOrEqual(1024 * 1024);
    const opened = await open(storage, storageKey, instanceKey, { expectedSha256: sealed.sha256 });
    const checked = await validateSnapshot(opened, { limits, expectedTreeDigest: treeDigest });
    expect(checked.files).toBe(plan.files);
  });
});

describe("symbolic links are never followed", () => {
  it("refuses a root that is a link (unsafe_root), and a root that is missing", async () => {
    const real = await richTree();
    const link = path.join(scratch, `link-${randomUUID()}`);
    await symlink(real, link);
    expect(await reasonOf(planTree(link, { selection: walk, limits }))).toBe("unsafe_root");
    expect(await reasonOf(planTree(path.join(scratch, "nope"), { selection: walk, limits }))).toBe(
      "unsafe_root",
    );
  });

  it("a link to a directory outside the tree is saved as a link: nothing outside is read", async () => {
    const outside = await freshDir("outside");
    await writeFile(path.join(outside, "private"), "never read");
    const root = await freshDir("linked");
    await symlink(outside, path.join(root, "escape"));
    const plan = await planTree(root, { selection: walk, limits });
    expect(plan.entries.map((e) => [e.path, e.kind])).toEqual([
      ["", "directory"],
      ["escape", "symlink"],
    ]);
  });

  it("a listed path under a parent that is a link is refused (unsafe_path), as are '..' and absolute paths", async () => {
    const outside = await freshDir("outside");
    await writeFile(path.join(outside, "private"), "never read");
    const root = await freshDir("listed");
    await symlink(outside, path.join(root, "sub"));
    const select = (paths: string[]): TreeSelection => ({ kind: "paths", paths });
    expect(await reasonOf(planTree(root, { selection: select(["sub/private"]), limits }))).toBe(
      "unsafe_path",
    );
    expect(await reasonOf(planTree(root, { selection: select(["../x"]), limits }))).toBe("unsafe_path");
    expect(await reasonOf(planTree(root, { selection: select(["/etc/passwd"]), limits }))).toBe(
      "unsafe_path",
    );
  });

  it("restoring never writes through a link in the target, and never replaces an entry", async () => {
    const source = await freshDir("src");
    await mkdir(path.join(source, "dir"));
    await writeFile(path.join(source, "dir/file"), "new");
    await writeFile(path.join(source, "top"), "new");
    const bytes = await snapshotBytes(source);

    const outside = await freshDir("outside");
    const throughLink = await freshDir("target");
    await symlink(outside, path.join(throughLink, "dir"));
    expect(await reasonOf(restoreSnapshot(Readable.from([bytes]), throughLink, { limits }))).toBe(
      "restore_target_exists",
    );
    expect(await readdir(outside)).toEqual([]);

    const occupied = await freshDir("target");
    await writeFile(path.join(occupied, "top"), "old");
    expect(await reasonOf(restoreSnapshot(Readable.from([bytes]), occupied, { limits }))).toBe(
      "restore_target_exists",
    );
    expect(await readFile(path.join(occupied, "top"), "utf8")).toBe("old");
  });
});

describe("a plan makes its calls on the spot, in slices (sliced.ts)", () => {
  it(`gives the event loop a turn at least every ${SLICE_CALLS} calls, and sees every entry`, async () => {
    const root = await freshDir("wide");
    const files = 4 * SLICE_CALLS;
    await mkdir(path.join(root, "sub"));
    await Promise.all(
      Array.from({ length: files }, (_, i) => writeFile(path.join(root, i % 2 ? "sub" : "", `f${i}`), "")),
    );
    const [plan, turns] = await turnsDuring(() => planTree(root, { selection: walk, limits }));
    expect(plan.files).toBe(files);
    expect(plan.entries).toHaveLength(files + 2);
    // One lstat per entry, a listing and a descriptor per directory.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(files / SLICE_CALLS) - 1);
  });
});

describe("directory descriptors", () => {
  /** The descriptors this process has open. */
  const openDescriptors = async () => (await readdir("/proc/self/fd")).length;

  it("a plan, an encoding, a restore and a digest close every directory they open, refused ones too", async () => {
    const root = await richTree();
    const target = await freshDir("restored");
    const before = await openDescriptors();
    const bytes = await snapshotBytes(root);
    await restoreSnapshot(Readable.from([bytes]), target, { limits });
    await digestTree(target, { selection: walk, limits });
    // Refused part way down the tree: in the walk, and while restoring onto what is there.
    expect(await reasonOf(planTree(root, { selection: walk, limits: { ...limits, maxFiles: 12 } }))).toBe(
      "too_many_files",
    );
    expect(await reasonOf(restoreSnapshot(Readable.from([bytes]), target, { limits }))).toBe(
      "restore_target_exists",
    );
    expect(await openDescriptors()).toBe(before);
  });

  it("an encoding destroyed part way closes its directories", async () => {
    const root = await richTree();
    const before = await openDescriptors();
    const { stream, summary } = encodeSnapshot(await planTree(root, { selection: walk, limits }));
    for await (const chunk of stream) {
      expect(chunk).toBeDefined();
      break; // leaving the loop destroys the stream mid-tree
    }
    await expect(summary).rejects.toThrow();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await openDescriptors()).toBe(before);
  });
});

describe("special files and limits refuse with their reason", () => {
  it("a FIFO is unsupported_filesystem_entry", async () => {
    const root = await freshDir("fifo");
    execFileSync("mkfifo", [path.join(root, "pipe")]);
    expect(await reasonOf(planTree(root, { selection: walk, limits }))).toBe("unsupported_filesystem_entry");
  });

  it("a socket is unsupported_filesystem_entry", async () => {
    const root = await freshDir("sock");
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(path.join(root, "s.sock"), resolve));
    try {
      expect(await reasonOf(planTree(root, { selection: walk, limits }))).toBe(
        "unsupported_filesystem_entry",
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("a character device is unsupported_filesystem_entry (listed path)", async () => {
    const reason = await reasonOf(
      planTree("/dev", { selection: { kind: "paths", paths: ["null"] }, limits }),
    );
    expect(reason).toBe("unsupported_filesystem_entry");
  });

  it("a name that is not valid UTF-8 is unsupported_filesystem_entry; any valid name is kept byte for byte", async () => {
    const root = await freshDir("names");
    const valid = ["\uFEFFbom", "\uFFFD", "\u{1F600} four bytes", "\uE000 private", "plain"];
    for (const name of valid) await writeFile(path.join(root, name), name);
    const plan = await planTree(root, { selection: walk, limits });
    // The root first, then the names in byte order.
    expect(plan.entries.map((e) => Buffer.from(e.path))).toEqual(
      ["", ...valid].map((name) => Buffer.from(name)).sort(Buffer.compare),
    );
    const target = await freshDir("names-restored");
    await restoreSnapshot(Readable.from([await snapshotBytes(root)]), target, { limits });
    expect((await readdir(target, { encoding: "buffer" })).sort(Buffer.compare)).toEqual(
      (await readdir(root, { encoding: "buffer" })).sort(Buffer.compare),
    );
    for (const bad of [[0xff], [0x61, 0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
      const dir = await freshDir("bad-name");
      await writeFile(Buffer.concat([Buffer.from(`${dir}/`), Buffer.from(bad)]), "x");
      expect(await reasonOf(planTree(dir, { selection: walk, limits }))).toBe("unsupported_filesystem_entry");
    }
  });

  it("too_many_files, file_too_large and too_large at the caller's limits, and not below them", async () => {
    const root = await freshDir("limits");
    for (let i = 0; i < 5; i += 1) await writeFile(path.join(root, `f${i}`), Buffer.alloc(100));
    const at = (l: Partial<TreeSnapshotLimits>) =>
      planTree(root, { selection: walk, limits: { ...limits, ...l } });
    expect(await reasonOf(at({ maxFiles: 4 }))).toBe("too_many_files");
    expect(await reasonOf(at({ maxFileBytes: 99 }))).toBe("file_too_large");
    expect(await reasonOf(at({ maxTotalBytes: 499 }))).toBe("too_large");
    const exact = await at({ maxFiles: 5, maxFileBytes: 100, maxTotalBytes: 500 });
    expect(exact.files).toBe(5);
  });
});

describe("an explicit list of paths (a git payload's untracked and ignored files)", () => {
  it("records the listed entries and their parent directories, and restores into an existing tree", async () => {
    const root = await freshDir("worktree");
    await mkdir(path.join(root, "src/gen"), { recursive: true });
    await writeFile(path.join(root, "src/tracked.ts"), "tracked");
    await writeFile(path.join(root, "src/gen/out.js"), "generated");
    await writeFile(path.join(root, ".env"), "TOKEN=1");
    await mkdir(path.join(root, "build/x"), { recursive: true });
    await writeFile(path.join(root, "build/x/a.o"), "obj");
    const selection: TreeSelection = { kind: "paths", paths: ["src/gen/out.js", ".env", "build/"] };
    const plan = await planTree(root, { selection, limits });
    expect(plan.entries.map((e) => e.path)).toEqual([
      ".env",
      "build",
      "build/x",
      "build/x/a.o",
      "src",
      "src/gen",
      "src/gen/out.js",
    ]);
    const bytes = await snapshotBytes(root, selection);

    const checkout = await freshDir("checkout");
    await mkdir(path.join(checkout, "src"));
    await writeFile(path.join(checkout, "src/tracked.ts"), "tracked");
    await restoreSnapshot(Readable.from([bytes]), checkout, { limits });
    expect(await readFile(path.join(checkout, "src/gen/out.js"), "utf8")).toBe("generated");
    expect(await readFile(path.join(checkout, "build/x/a.o"), "utf8")).toBe("obj");
    expect((await digestTree(checkout, { selection, limits })).treeDigest).toBe(
      (await digestTree(root, { selection, limits })).treeDigest,
    );
  });
});

describe("changes are seen", () => {
  it("a file written between plan and read errors the stream (changed_during_capture)", async () => {
    const root = await richTree();
    const plan = await planTree(root, { selection: walk, limits });
    await writeFile(path.join(root, "secret.txt"), "s3cr3T"); // same size, new bytes
    const { stream } = encodeSnapshot(plan);
    expect(
      await reasonOf(
        (async () => {
          for await (const c of stream) void c;
        })(),
      ),
    ).toBe("changed_during_capture");
  });

  it("a file replaced by a link between plan and read is not followed (changed_during_capture)", async () => {
    const root = await freshDir("swap");
    await writeFile(path.join(root, "f"), "data");
    const plan = await planTree(root, { selection: walk, limits });
    await rm(path.join(root, "f"));
    await symlink("/etc/passwd", path.join(root, "f"));
    const { stream } = encodeSnapshot(plan);
    expect(
      await reasonOf(
        (async () => {
          for await (const c of stream) void c;
        })(),
      ),
    ).toBe("changed_during_capture");
  });

  it("digestTree: unchanged tree keeps both digests; a touch changes the state digest; new bytes change the tree digest", async () => {
    const root = await richTree();
    const first = await digestTree(root, { selection: walk, limits });
    expect(await digestTree(root, { selection: walk, limits })).toEqual(first);
    await utimes(path.join(root, "empty"), new Date(), new Date());
    const touched = await digestTree(root, { selection: walk, limits });
    expect(touched.stateDigest).not.toBe(first.stateDigest);
    expect(touched.treeDigest).toBe(first.treeDigest);
    await writeFile(path.join(root, "empty"), "now something");
    expect((await digestTree(root, { selection: walk, limits })).treeDigest).not.toBe(first.treeDigest);
    await writeFile(path.join(root, "node_modules/left-pad/index.js"), "excluded: no change");
    const excluded = await digestTree(root, { selection: walk, limits });
    await writeFile(path.join(root, "node_modules/left-pad/index.js"), "still excluded");
    expect((await digestTree(root, { selection: walk, limits })).treeDigest).toBe(excluded.treeDigest);
  });
});

describe("validation refuses anything but an intact snapshot (invalid_snapshot)", () => {
  let bytes: Buffer;
  beforeAll(async () => {
    bytes = await snapshotBytes(await richTree());
  });
  const validate = (data: Buffer, expectedTreeDigest?: string) =>
    validateSnapshot(Readable.from([data]), { limits, expectedTreeDigest });

  it("a flipped bit anywhere: magic, a record, file content, the digest, the trailer", async () => {
    for (const at of [0, 9, 30, 1000, Math.floor(bytes.length / 2), bytes.length - 40, bytes.length - 1]) {
      const tampered = Buffer.from(bytes);
      tampered[at]! ^= 0x01;
      expect(await reasonOf(validate(tampered))).toBe("invalid_snapshot");
    }
  });

  it("a cut-off stream, trailing bytes, and a snapshot of another tree", async () => {
    expect(await reasonOf(validate(bytes.subarray(0, bytes.length - 1)))).toBe("invalid_snapshot");
    expect(await reasonOf(validate(bytes.subarray(0, 100)))).toBe("invalid_snapshot");
    expect(await reasonOf(validate(Buffer.concat([bytes, Buffer.from([0])])))).toBe("invalid_snapshot");
    expect(await reasonOf(validate(bytes, "0".repeat(64)))).toBe("invalid_snapshot");
  });

  it("limits smaller than the snapshot's contents refuse it before it is written out", async () => {
    const small = { ...limits, maxFileBytes: 1024 };
    expect(await reasonOf(validateSnapshot(Readable.from([bytes]), { limits: small }))).toBe(
      "invalid_snapshot",
    );
  });

  it("a tampered stream given to restore fails it (restore into staging, discard on error)", async () => {
    const tampered = Buffer.from(bytes);
    tampered[Math.floor(bytes.length / 2)]! ^= 0x01;
    const staging = await freshDir("staging");
    expect(await reasonOf(restoreSnapshot(Readable.from([tampered]), staging, { limits }))).toBe(
      "invalid_snapshot",
    );
  });
});
