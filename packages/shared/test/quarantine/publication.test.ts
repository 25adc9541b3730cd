/**
 * Publication into the real object store: order, failure compensation (injected ENOSPC),
 * the two-capture ownership race in one process, permissions, the rename fallback.
 * Real git and filesystem throughout; faults are injected through the publication fs hook.
 * (Ownership records, recovery and the race across processes: ownership.test.ts.)
 */
import { chmodSync, readdirSync } from "node:fs";
import { copyFile, readdir, readFile, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { realPublishFs, type PublishFs } from "../../src";
import { capture } from "./capture";
import {
  bigContent,
  cleanup,
  errnoError,
  fsckStrict,
  indexAndHead,
  makeRepo,
  packsIn,
  repoWithLargeFile,
  type Repo,
} from "./git-fixture";
import { packNameFor } from "./ownership-fixture";
import { ownersDir } from "./owners";
import { rejectionOf } from "../rejection";

afterEach(cleanup);

/** The real filesystem, except that `link` runs `fault` first (which may throw). */
function faultyFs(fault: (from: string, to: string) => Promise<void> | void): PublishFs {
  return {
    ...realPublishFs,
    link: async (from, to) => {
      await fault(from, to);
      return realPublishFs.link(from, to);
    },
  };
}

const packFiles = (names: string[]): string[] =>
  names.filter((n) => /^pack-.*\.(pack|idx|rev|keep)$/.test(n));

const isStorePackFile = (repo: Repo, file: string): boolean =>
  path.dirname(file) === path.join(repo.objects, "pack");

/** Nothing of the capture is left: no quarantine, no ownership record, no ref. */
async function expectNoTrace(repo: Repo, ref: string): Promise<void> {
  expect((await readdir(repo.objects)).filter((n) => n.startsWith("tmp_objdir-"))).toEqual([]);
  expect(await readdir(path.join(repo.objects, "info"))).not.toContain("reclaim-pack-owners");
  await expect(repo.git(["rev-parse", "--verify", "-q", ref])).rejects.toThrow();
}

async function expectBlob(repo: Repo, commit: string, file: string, content: Buffer): Promise<void> {
  expect((await repo.git(["cat-file", "-s", `${commit}:${file}`])).trim()).toBe(String(content.length));
}

describe("publication order", () => {
  it("publishes loose objects first, then each pack's .keep, .pack, .rev before its .idx", async () => {
    const repo = await repoWithLargeFile();
    const order: string[] = [];
    const fs = faultyFs((_from, to) => {
      order.push(path.relative(repo.objects, to));
    });
    const { value, published } = await capture(repo, { packing: "keep-rev", testHooks: { fs } });
    expect(published.packs).toHaveLength(1);
    const pack = published.packs[0]!;
    const firstPackFile = order.findIndex((p) => p.startsWith("pack/"));
    expect(firstPackFile).toBeGreaterThan(0);
    expect(order.slice(0, firstPackFile).every((p) => /^[0-9a-f]{2}\/[0-9a-f]{38}$/.test(p))).toBe(true);
    expect(order.slice(firstPackFile)).toEqual(
      ["keep", "pack", "rev", "idx"].map((e) => `pack/${pack}.${e}`),
    );
    expect(published.looseObjects).toBeGreaterThan(0);
    await expectBlob(repo, value.commit, "a-large.bin", bigContent(1));
    await fsckStrict(repo);
  });
});

describe("failed publication", () => {
  it.each(["bulk", "keep-rev"] as const)(
    "leaves none of a pack's files behind when its index cannot be published (ENOSPC), and moves no ref (%s pack)",
    async (packing) => {
      const repo = await repoWithLargeFile();
      const packsBefore = await packsIn(repo.objects);
      const realFiles = await indexAndHead(repo);
      const fs = faultyFs((_from, to) => {
        if (to.endsWith(".idx")) throw errnoError("ENOSPC", "link", to);
      });
      const error = await rejectionOf(
        capture(repo, { packing, ref: "refs/reclaim/failed", testHooks: { fs } }),
      );
      expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
      expect(error.message).toContain("ENOSPC");
      expect(packFiles(await packsIn(repo.objects))).toEqual(packFiles(packsBefore));
      await expectNoTrace(repo, "refs/reclaim/failed");
      expect(await indexAndHead(repo)).toEqual(realFiles);
      await fsckStrict(repo);
    },
  );

  it("keeps a complete pack readable when a later pack's index fails (ENOSPC)", async () => {
    const repo = await makeRepo();
    const contents = { "a-large.bin": bigContent(11), "b-large.bin": bigContent(12) };
    for (const [file, content] of Object.entries(contents))
      await writeFile(path.join(repo.dir, file), content);
    await writeFile(path.join(repo.dir, "small.txt"), "small\n");
    const realFiles = await indexAndHead(repo);
    // One `git add` per large file: two packs, published one after the other (loose objects
    // come first, so the last step of a publication is always a pack's). The first pack is
    // published completely; the second fails on its index.
    let indexes = 0;
    const fs = faultyFs((_from, to) => {
      if (to.endsWith(".idx") && ++indexes === 2) throw errnoError("ENOSPC", "link", to);
    });
    const error = await rejectionOf(
      capture(repo, {
        packing: "separate-adds",
        paths: Object.keys(contents),
        ref: "refs/reclaim/two-packs",
        testHooks: { fs },
      }),
    );
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    expect(indexes).toBe(2);
    const files = packFiles(await packsIn(repo.objects));
    const complete = files.filter((f) => f.endsWith(".idx")).map((f) => f.slice(0, -4));
    expect(complete).toHaveLength(1);
    // The incomplete pack's files are gone; the complete one has both of its files.
    expect(files).toEqual([`${complete[0]}.idx`, `${complete[0]}.pack`]);
    const listing = await repo.git([
      "verify-pack",
      "-v",
      path.join(repo.objects, "pack", `${complete[0]}.idx`),
    ]);
    const stored = await Promise.all(
      Object.keys(contents).map(async (file) => (await repo.git(["hash-object", file])).trim()),
    );
    const inPack = stored.filter((oid) => listing.includes(`${oid} blob`));
    expect(inPack).toHaveLength(1);
    const file = Object.keys(contents)[stored.indexOf(inPack[0]!)]!;
    expect((await repo.git(["cat-file", "-s", inPack[0]!])).trim()).toBe(
      String(contents[file as keyof typeof contents].length),
    );
    const missing = stored.find((oid) => oid !== inPack[0])!;
    await expect(repo.git(["cat-file", "-e", missing])).rejects.toThrow();
    await expectNoTrace(repo, "refs/reclaim/two-packs");
    expect(await indexAndHead(repo)).toEqual(realFiles);
    await fsckStrict(repo);
  });

  it("never removes a pack file that was in the store before this capture linked it", async () => {
    const repo = await repoWithLargeFile();
    const first = await capture(repo);
    const [pack] = first.published.packs;
    // A crashed publisher's leftover: the same .pack, without its index.
    await unlink(path.join(repo.objects, "pack", `${pack}.idx`));
    const leftover = await stat(path.join(repo.objects, "pack", `${pack}.pack`));
    const realFiles = await indexAndHead(repo);
    const fs = faultyFs((_from, to) => {
      if (to.endsWith(".idx")) throw errnoError("EIO", "link", to);
    });
    expect((await rejectionOf(capture(repo, { testHooks: { fs } }))).code).toBe(
      "RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED",
    );
    expect((await stat(path.join(repo.objects, "pack", `${pack}.pack`))).ino).toBe(leftover.ino);
    expect(await indexAndHead(repo)).toEqual(realFiles);
    await fsckStrict(repo);
  });

  it("removes a pack file whose permissions could not be set after it was linked (chmod fails)", async () => {
    const repo = await repoWithLargeFile();
    await repo.git(["config", "core.sharedRepository", "group"]);
    const realFiles = await indexAndHead(repo);
    const fs: PublishFs = {
      ...realPublishFs,
      chmod: async (target, mode) => {
        if (target.endsWith(".pack")) throw errnoError("EIO", "chmod", target);
        return realPublishFs.chmod(target, mode);
      },
    };
    const error = await rejectionOf(
      capture(repo, {
        ref: "refs/reclaim/chmod",
        testHooks: { fs },
        // Without group bits, the published .pack needs a chmod, which then fails.
        onCommit: (_commit, ctx) => {
          const packDir = path.join(ctx.path, "pack");
          for (const name of readdirSync(packDir)) chmodSync(path.join(packDir, name), 0o400);
        },
      }),
    );
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    expect(error.message).toMatch(/\.pack: EIO/);
    expect(packFiles(await packsIn(repo.objects))).toEqual([]);
    await expectNoTrace(repo, "refs/reclaim/chmod");
    expect(await indexAndHead(repo)).toEqual(realFiles);
    await fsckStrict(repo);
  });
});

describe("a .pack already in the store without its index", () => {
  it.each([
    ["hard links", null],
    ["the rename fallback", "EPERM"],
  ])(
    "is replaced, not adopted, when it is not this capture's (a dead capture's empty placeholder), with %s",
    async (_case, code) => {
      const pack = await packNameFor(1);
      const repo = await repoWithLargeFile();
      const leftover = path.join(repo.objects, "pack", `${pack}.pack`);
      await writeFile(leftover, "");
      const fs = code
        ? faultyFs((_from, to) => {
            throw errnoError(code, "link", to);
          })
        : realPublishFs;
      const { value, published } = await capture(repo, { testHooks: { fs } });
      expect(published.packs).toEqual([pack]);
      expect((await stat(leftover)).size).toBeGreaterThan(0);
      await repo.git(["verify-pack", path.join(repo.objects, "pack", `${pack}.idx`)]);
      await expectBlob(repo, value.commit, "a-large.bin", bigContent(1));
      await fsckStrict(repo);
    },
  );

  it("is neither adopted nor removed when it differs from this capture's and its index is published", async () => {
    const pack = await packNameFor(1);
    const repo = await repoWithLargeFile();
    const leftover = path.join(repo.objects, "pack", `${pack}.pack`);
    await writeFile(leftover, "not this pack");
    await writeFile(path.join(repo.objects, "pack", `${pack}.idx`), "an index");
    const error = await rejectionOf(capture(repo, { ref: "refs/reclaim/corrupt" }));
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    expect(error.message).toContain("differs");
    expect(await readFile(leftover, "utf8")).toBe("not this pack");
    await expect(repo.git(["rev-parse", "--verify", "-q", "refs/reclaim/corrupt"])).rejects.toThrow();
  });
});

describe("two captures of one process publishing the same pack", () => {
  it("keep the surviving capture's pack readable when the other fails mid-publication", async () => {
    const repo = await repoWithLargeFile();
    const realFiles = await indexAndHead(repo);
    let bIsWaiting!: () => void;
    const bWaits = new Promise<void>((resolve) => (bIsWaiting = resolve));
    let b: ReturnType<typeof capture> | undefined;
    // A has linked its .pack into the store; before its .idx, B runs all the way to the same
    // pack, finds A owning it and waits. Then A's .idx fails and A compensates.
    const aFs = faultyFs(async (_from, to) => {
      if (!to.endsWith(".idx")) return;
      expect((await readdir(path.dirname(to))).includes(path.basename(to, ".idx") + ".pack")).toBe(true);
      b = capture(repo, { ref: "refs/reclaim/b", testHooks: { onPackBusy: () => bIsWaiting() } });
      await bWaits;
      throw errnoError("ENOSPC", "link", to);
    });
    const a = await rejectionOf(capture(repo, { ref: "refs/reclaim/a", testHooks: { fs: aFs } }));
    expect(a.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    const survivor = await b!;
    const [pack] = survivor.published.packs;
    expect(await packsIn(repo.objects)).toEqual(expect.arrayContaining([`${pack}.pack`, `${pack}.idx`]));
    const commit = (await repo.git(["rev-parse", "refs/reclaim/b"])).trim();
    expect(commit).toBe(survivor.value.commit);
    await expectBlob(repo, commit, "a-large.bin", bigContent(1));
    await expectNoTrace(repo, "refs/reclaim/a");
    expect(await indexAndHead(repo)).toEqual(realFiles);
    await fsckStrict(repo);
  });

  it("both succeed when neither fails, concurrently", async () => {
    const repo = await repoWithLargeFile();
    const realFiles = await indexAndHead(repo);
    // Neither publishes before both have finished `git add`: otherwise the later one finds
    // the large blob already in the store and writes no pack of its own.
    let arrived = 0;
    let bothArrived!: () => void;
    const barrier = new Promise<void>((resolve) => (bothArrived = resolve));
    const atBarrier = (): PublishFs => {
      let first = true;
      return faultyFs(async () => {
        if (!first) return;
        first = false;
        if (++arrived === 2) bothArrived();
        await barrier;
      });
    };
    const [one, two] = await Promise.all([
      capture(repo, { ref: "refs/reclaim/one", testHooks: { fs: atBarrier() } }),
      capture(repo, { ref: "refs/reclaim/two", testHooks: { fs: atBarrier() } }),
    ]);
    expect(one.published.packs).toHaveLength(1);
    expect(one.value.tree).toBe(two.value.tree);
    expect(one.published.packs).toEqual(two.published.packs);
    expect(packFiles(await packsIn(repo.objects))).toEqual(
      expect.arrayContaining([`${one.published.packs[0]}.pack`, `${one.published.packs[0]}.idx`]),
    );
    expect(await indexAndHead(repo)).toEqual(realFiles);
    await fsckStrict(repo);
  });
});

/** Content whose blob would go into a fan-out directory that does not exist yet (nor is `besides`'s). */
async function inNewFanOut(
  repo: Repo,
  base: string,
  besides = "",
): Promise<{ content: string; blob: string }> {
  for (let i = 0; ; i++) {
    const content = `${base} ${i}\n`;
    const blob = (await repo.git(["hash-object", "--stdin"], content)).trim();
    const taken =
      blob.slice(0, 2) === besides.slice(0, 2) || (await exists(path.join(repo.objects, blob.slice(0, 2))));
    if (!taken) return { content, blob };
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

describe("permissions", () => {
  it("gives new object directories and files core.sharedRepository permissions, as git does", async () => {
    const repo = await makeRepo();
    await repo.git(["config", "core.sharedRepository", "group"]);
    // Both contents are chosen so that no fan-out directory holds them yet: the initial
    // commit's hash changes with the clock, and its directory was made before the setting.
    const mine = await inNewFanOut(repo, "a new object in a new fan-out directory");
    const theirs = await inNewFanOut(repo, "made by git itself, elsewhere", mine.blob);
    await writeFile(path.join(repo.dir, "new.txt"), mine.content);
    const { value } = await capture(repo);
    const blob = (await repo.git(["rev-parse", `${value.commit}:new.txt`])).trim();
    expect(blob).toBe(mine.blob);
    const published = await stat(path.join(repo.objects, blob.slice(0, 2)));
    // What git itself gives a fan-out directory it creates in this repository.
    const own = (await repo.git(["hash-object", "-w", "--stdin"], theirs.content)).trim();
    const byGit = await stat(path.join(repo.objects, own.slice(0, 2)));
    expect(published.mode & 0o7777).toBe(byGit.mode & 0o7777);
    expect(published.mode & 0o2070).toBe(0o2070);
    const file = await stat(path.join(repo.objects, blob.slice(0, 2), blob.slice(2)));
    expect(file.mode & 0o070).toBe(0o040);
    await fsckStrict(repo);
  });

  it("gives pack files, the owners directory and ownership records core.sharedRepository permissions", async () => {
    const repo = await repoWithLargeFile();
    await repo.git(["config", "core.sharedRepository", "group"]);
    const seen: { dir?: number; record?: number } = {};
    const fs = faultyFs(async (_from, to) => {
      if (!to.endsWith(".pack")) return;
      // While the pack is being published, its record exists.
      seen.dir = (await stat(ownersDir(repo))).mode;
      seen.record = (await stat(path.join(ownersDir(repo), path.basename(to, ".pack")))).mode;
    });
    const { published } = await capture(repo, {
      testHooks: { fs },
      onCommit: (_commit, ctx) => {
        const packDir = path.join(ctx.path, "pack");
        for (const name of readdirSync(packDir)) chmodSync(path.join(packDir, name), 0o400);
      },
    });
    expect(seen.dir! & 0o2070).toBe(0o2070);
    expect(seen.record! & 0o060).toBe(0o060);
    for (const extension of ["pack", "idx"]) {
      const mode = (await stat(path.join(repo.objects, "pack", `${published.packs[0]}.${extension}`))).mode;
      expect(mode & 0o777).toBe(0o440); // read-only stays read-only; the group may read
    }
    await fsckStrict(repo);
  });
});

describe("filesystems without hard links", () => {
  it.each(["EPERM", "ENOTSUP"])(
    "publishes a pack by rename where the filesystem refuses hard links (%s)",
    async (code) => {
      const repo = await repoWithLargeFile();
      const realFiles = await indexAndHead(repo);
      const fs = faultyFs((_from, to) => {
        throw errnoError(code, "link", to);
      });
      const { value, published } = await capture(repo, { ref: "refs/reclaim/renamed", testHooks: { fs } });
      expect(published.packs).toHaveLength(1);
      expect(published.looseObjects).toBeGreaterThan(0);
      const pack = published.packs[0]!;
      expect(packFiles(await packsIn(repo.objects))).toEqual([`${pack}.idx`, `${pack}.pack`]);
      await expectBlob(repo, value.commit, "a-large.bin", bigContent(1));
      expect((await repo.git(["rev-parse", "refs/reclaim/renamed"])).trim()).toBe(value.commit);
      expect(await readdir(path.join(repo.objects, "info"))).not.toContain("reclaim-pack-owners");
      expect(await indexAndHead(repo)).toEqual(realFiles);
      await fsckStrict(repo);
    },
  );

  it("renames only where hard links are refused, and never over an existing object", async () => {
    const repo = await makeRepo();
    await writeFile(path.join(repo.dir, "tracked.txt"), "changed\n");
    await writeFile(path.join(repo.dir, "new.txt"), "new\n");
    const existing = (await repo.git(["rev-parse", "HEAD:tracked.txt"])).trim();
    await writeFile(path.join(repo.dir, "same-as-tracked.txt"), "tracked\n"); // same blob as HEAD's
    const existingInode = (await stat(path.join(repo.objects, existing.slice(0, 2), existing.slice(2)))).ino;
    const fs = faultyFs((_from, to) => {
      throw errnoError("EPERM", "link", to);
    });
    const { value, published } = await capture(repo, { testHooks: { fs } });
    expect(published.looseObjects).toBeGreaterThan(0);
    expect((await stat(path.join(repo.objects, existing.slice(0, 2), existing.slice(2)))).ino).toBe(
      existingInode,
    );
    expect((await repo.git(["cat-file", "-p", `${value.commit}:new.txt`])).trim()).toBe("new");
    await fsckStrict(repo);
  });

  it("never replaces a pack file that appears after the rename fallback checked its name", async () => {
    const repo = await repoWithLargeFile();
    const sources = new Map<string, string>();
    let planted: number | undefined;
    // Another publisher's identical .pack lands right after this capture looked for one.
    const plant = async (target: string): Promise<boolean> => {
      if (planted !== undefined || !target.endsWith(".pack") || !isStorePackFile(repo, target)) return false;
      await copyFile(sources.get(target)!, target);
      planted = (await stat(target)).ino;
      return true;
    };
    const fs: PublishFs = {
      ...realPublishFs,
      link: async (from, to) => {
        sources.set(to, from);
        throw errnoError("EPERM", "link", to);
      },
      lstat: async (target) => ((await plant(target)) ? null : realPublishFs.lstat(target)),
      createExclusive: async (target, content) => {
        await plant(target);
        return realPublishFs.createExclusive(target, content);
      },
    };
    const { value, published } = await capture(repo, { testHooks: { fs } });
    expect(planted).toBeDefined();
    expect((await stat(path.join(repo.objects, "pack", `${published.packs[0]}.pack`))).ino).toBe(planted);
    await expectBlob(repo, value.commit, "a-large.bin", bigContent(1));
    await fsckStrict(repo);
  });
});
