/**
 * The shared filesystem protocol every domain uses (packages/core/src/fs): rename a real
 * directory aside to a retired name, delete it later, finish interrupted deletions, and never
 * follow a symbolic link. Real directories in a temporary root.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  claimedName,
  finishInterruptedDeletes,
  hostProcessProbe,
  PathRefused,
  ProvenDir,
  removeRetired,
  retire,
  retiredName,
  retiredPrefixOf,
  treeStats,
} from "@reclaim/core";
import { SLICE_CALLS } from "@reclaim/shared";
import { turnsDuring } from "@reclaim/testkit";

let root: string;
/** The temporary root, as a configured top folder. */
let top: ProvenDir;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), "reclaim-fs-"));
  top = (await ProvenDir.top(root))!;
});
afterEach(async () => rm(root, { recursive: true, force: true }));

async function tree(dir: string, files = 3): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (let i = 0; i < files; i++) await writeFile(path.join(dir, `f${i}`), Buffer.alloc(8192, i));
  return dir;
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PathRefused) return error.reason;
    throw error;
  }
  return "accepted";
}

describe("retire renames only a real directory, to a unique retired sibling", () => {
  it("renames a directory to <prefix>-<UUID> in the same folder", async () => {
    const dir = await tree(path.join(root, "run"));
    const to = await retire(top, path.basename(dir), ".expired");
    expect(existsSync(path.join(root, to))).toBe(true);
    expect(retiredPrefixOf(to)).toBe(".expired");
    expect(existsSync(dir)).toBe(false);
  });

  it("refuses a symlink, a file, a missing path, and a directory whose identity changed", async () => {
    const outside = await tree(path.join(root, "outside"));
    await symlink(outside, path.join(root, "link"));
    await writeFile(path.join(root, "file"), "x");
    const dir = await tree(path.join(root, "dir"));
    const checked = (await top.child("dir"))!.identity;
    // Moved away and recreated at the same path (while the old one exists: a different inode).
    await rename(dir, path.join(root, "moved"));
    await tree(dir);

    expect(await refusal(retire(top, "link", ".expired"))).toBe("symlink");
    expect(await refusal(retire(top, "file", ".expired"))).toBe("not_a_directory");
    expect(await refusal(retire(top, "missing", ".expired"))).toBe("missing");
    expect(await refusal(retire(top, "dir", ".expired", checked))).toBe("identity_changed");
    expect((await readdir(root)).sort()).toEqual(["dir", "file", "link", "moved", "outside"]);
  });
});

describe("removeRetired never follows a symlink", () => {
  it("deletes the link inside a retired tree, not what it points to, and counts allocated bytes", async () => {
    const outside = await tree(path.join(root, "outside"));
    const dir = await tree(path.join(root, "run"));
    await symlink(outside, path.join(dir, "escape"));
    const bytes = await removeRetired(top, await retire(top, path.basename(dir), ".expired"));
    expect(bytes).toBeGreaterThanOrEqual(3 * 8192);
    expect(await readFile(path.join(outside, "f0"))).toHaveLength(8192);
    expect(await readdir(root)).toEqual(["outside"]);
  });

  it("deletes a nested tree in one walk, counting the allocated bytes treeStats counts, links as themselves", async () => {
    const outside = await tree(path.join(root, "outside"));
    const dir = await tree(path.join(root, "run"), 20);
    for (let d = 0; d < 12; d++) await tree(path.join(dir, `d${d}`, "deeper"), 5);
    await symlink(outside, path.join(dir, "d3", "deeper", "into-outside"));
    await symlink(path.join(outside, "f1"), path.join(dir, "file-link"));
    const { allocatedBytes } = await treeStats(dir);
    const bytes = await removeRetired(top, await retire(top, path.basename(dir), ".expired"));
    expect(bytes).toBe(allocatedBytes);
    expect(await readdir(root)).toEqual(["outside"]);
    expect((await readdir(outside)).sort()).toEqual(["f0", "f1", "f2"]);
  });

  it("refuses a retired name that is itself a symlink", async () => {
    const outside = await tree(path.join(root, "outside"));
    const link = retiredName(".expired");
    await symlink(outside, path.join(root, link));
    await expect(removeRetired(top, link)).rejects.toBeInstanceOf(PathRefused);
    expect(await readdir(outside)).toHaveLength(3);
  });

  it("refuses a path that does not carry a retired name", async () => {
    const dir = await tree(path.join(root, "run"));
    await expect(removeRetired(top, "run")).rejects.toThrow(/does not carry a retired name/);
    expect(existsSync(dir)).toBe(true);
  });
});

describe("finishing interrupted deletions", () => {
  it("deletes leftovers in bounded batches, continuing from its cursor past one it cannot delete", async () => {
    const outside = await tree(path.join(root, "outside"));
    // A symlink carrying a retired name cannot be deleted by the protocol: it stays, and the
    // walk goes on past it.
    await symlink(outside, path.join(root, retiredName(".expired")));
    for (let i = 0; i < 4; i++) await tree(path.join(root, retiredName(".expired")), 1);
    await tree(path.join(root, "live-run")); // not retired: never touched

    const first = await finishInterruptedDeletes(top, { prefixes: [".expired"], limit: 3, after: null });
    expect(first.results).toHaveLength(3);
    expect(first.cursor).not.toBeNull();
    const second = await finishInterruptedDeletes(top, {
      prefixes: [".expired"],
      limit: 3,
      after: first.cursor,
    });
    expect(second.results).toHaveLength(2);
    expect(second.cursor).toBeNull();

    const all = [...first.results, ...second.results];
    expect(all.filter((r) => r.refused === "symlink")).toHaveLength(1);
    expect(all.filter((r) => r.error !== undefined)).toHaveLength(0);
    expect(all.filter((r) => r.refused === undefined && !r.taken)).toHaveLength(4);
    const left = (await readdir(root)).sort();
    expect(left).toHaveLength(3);
    expect(left).toEqual(expect.arrayContaining(["live-run", "outside"]));
    expect(await readdir(outside)).toHaveLength(3);
  });

  it("two jobs finishing the same folder at once delete each leftover exactly once, and neither reports a failure", async () => {
    for (let i = 0; i < 40; i++) await tree(path.join(root, retiredName(".expired")), 4);
    const walk = () => finishInterruptedDeletes(top, { prefixes: [".expired"], limit: 50, after: null });
    const [a, b] = await Promise.all([walk(), walk()]);
    const results = [...a.results, ...b.results];
    expect(results.filter((r) => r.error !== undefined)).toEqual([]);
    const deleted = results.filter((r) => !r.taken);
    expect(deleted).toHaveLength(40);
    expect(new Set(deleted.map((r) => r.name)).size).toBe(40);
    expect(await readdir(root)).toEqual([]);
  });

  it("a tree claimed by a process that still runs is left to it; one whose claimant is gone is finished", async () => {
    const live = spawn("sleep", ["300"], { stdio: "ignore" });
    const dead = spawn("true", { stdio: "ignore" });
    try {
      const liveStart = hostProcessProbe.startTime(live.pid!)!.getTime();
      await new Promise((resolve) => dead.once("exit", resolve));
      const held = await tree(
        path.join(root, claimedName(".expired", { pid: live.pid!, startedAtMs: liveStart })),
      );
      // Its start time unreadable when it claimed: kept while the pid exists (fail closed).
      const unknownStart = await tree(
        path.join(root, claimedName(".expired", { pid: live.pid!, startedAtMs: null })),
      );
      const killed = await tree(
        path.join(root, claimedName(".expired", { pid: dead.pid!, startedAtMs: liveStart })),
      );
      // The pid now belongs to a process that started later than the claimant.
      const reused = await tree(
        path.join(root, claimedName(".expired", { pid: live.pid!, startedAtMs: liveStart - 3_600_000 })),
      );
      const batch = await finishInterruptedDeletes(top, { prefixes: [".expired"], limit: 50, after: null });
      expect(batch.results.map((r) => r.name).sort()).toEqual(
        [path.basename(killed), path.basename(reused)].sort(),
      );
      expect(batch.results.every((r) => r.error === undefined && r.bytes! > 0)).toBe(true);
      expect(existsSync(held) && existsSync(unknownStart)).toBe(true);
      expect(existsSync(killed) || existsSync(reused)).toBe(false);
    } finally {
      live.kill("SIGKILL");
    }
  });

  it("only walks the prefixes it is given", async () => {
    const trash = await tree(path.join(root, retiredName(".trash")));
    const retiring = await tree(path.join(root, retiredName(".retiring")));
    const batch = await finishInterruptedDeletes(top, { prefixes: [".expired"], limit: 50, after: null });
    expect(batch.results).toEqual([]);
    expect(existsSync(trash) && existsSync(retiring)).toBe(true);
  });
});

describe("walks make their syscalls on the spot, in slices (fs/calls.ts, shared sliced.ts)", () => {
  it(`a walk gives the event loop a turn at least every ${SLICE_CALLS} calls`, async () => {
    const dir = path.join(root, "wide");
    await mkdir(dir);
    const files = 4 * SLICE_CALLS;
    await Promise.all(Array.from({ length: files }, (_, i) => writeFile(path.join(dir, `f${i}`), "")));
    const [stats, turns] = await turnsDuring(() => treeStats(dir));
    expect(stats.entries).toBe(files + 1);
    // One lstat per entry and a readdir: at least one turn per slice of calls after the first.
    expect(turns).toBeGreaterThanOrEqual(Math.floor((files + 2) / SLICE_CALLS) - 1);
  });

  it("a removal walk in slices removes everything it counts, and its errors are node:fs's own", async () => {
    const big = await tree(path.join(root, "big"), 2 * SLICE_CALLS);
    const retired = await retire(top, path.basename(big), ".trash");
    const before = await treeStats(path.join(root, retired));
    const [removed, turns] = await turnsDuring(() => removeRetired(top, retired));
    expect(removed).toBe(before.allocatedBytes);
    expect(turns).toBeGreaterThanOrEqual(1);
    expect(existsSync(path.join(root, retired))).toBe(false);
    await expect(treeStats(path.join(root, "nothing-here"))).rejects.toMatchObject({ code: "ENOENT" });
  });
});
