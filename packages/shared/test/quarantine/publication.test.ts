/**
 * Publication into the real object store: order, failure compensation (injected ENOSPC),
 * the two-capture ownership race, concurrency, permissions, the rename fallback.
 * Real git and filesystem throughout; faults are injected through the publication fs hook.
 */
import { execFile } from "node:child_process";
import { mkdir, readdir, stat, unlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { realPublishFs, type PublishFs, type Timer, type Clock } from "../../src";
import { capture } from "./capture";
import {
  bigContent,
  cleanup,
  errnoError,
  fsckStrict,
  indexAndHead,
  makeRepo,
  packsIn,
  type Repo,
} from "./git-fixture";
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

async function repoWithLargeFile(seed = 1): Promise<Repo> {
  const repo = await makeRepo();
  await writeFile(path.join(repo.dir, "a-large.bin"), bigContent(seed));
  await writeFile(path.join(repo.dir, "small-1.txt"), "one\n");
  await writeFile(path.join(repo.dir, "small-2.txt"), "two\n");
  return repo;
}

const packFiles = (names: string[]): string[] =>
  names.filter((n) => /^pack-.*\.(pack|idx|rev|keep)$/.test(n));

describe("publication order", () => {
  it("publishes loose objects first, then each pack's .pack before its .idx", async () => {
    const repo = await repoWithLargeFile();
    const order: string[] = [];
    const fs = faultyFs((_from, to) => {
      const stored = path.relative(repo.objects, to);
      if (!stored.startsWith("info/")) order.push(stored); // info/: the pack's ownership record
    });
    const { published } = await capture(repo, { testHooks: { fs } });
    const firstPackFile = order.findIndex((p) => p.startsWith("pack/"));
    expect(order.slice(0, firstPackFile).every((p) => /^[0-9a-f]{2}\/[0-9a-f]{38}$/.test(p))).toBe(true);
    const pack = published.packs[0]!;
    expect(order.slice(firstPackFile)).toEqual([`pack/${pack}.pack`, `pack/${pack}.idx`]);
    expect(published.looseObjects).toBeGreaterThan(0);
    await fsckStrict(repo);
  });
});

describe("failed publication", () => {
  it("leaves no .pack behind when the pack's index cannot be published (ENOSPC), and moves no ref", async () => {
    const repo = await repoWithLargeFile();
    const packsBefore = await packsIn(repo.objects);
    const fs = faultyFs((_from, to) => {
      if (to.endsWith(".idx")) throw errnoError("ENOSPC", "link", to);
    });
    const error = await rejectionOf(capture(repo, { ref: "refs/reclaim/failed", testHooks: { fs } }));
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    expect(error.message).toContain("ENOSPC");
    expect(packFiles(await packsIn(repo.objects))).toEqual(packFiles(packsBefore));
    await expect(repo.git(["rev-parse", "--verify", "-q", "refs/reclaim/failed"])).rejects.toThrow();
    expect((await readdir(repo.objects)).filter((n) => n.startsWith("tmp_objdir-"))).toEqual([]);
    await fsckStrict(repo);
  });

  it("keeps a complete pack readable when a later loose object fails (ENOSPC)", async () => {
    const repo = await repoWithLargeFile();
    const first = await capture(repo, { ref: "refs/reclaim/first" });
    const [pack] = first.published.packs;
    const inodes = await Promise.all(
      ["pack", "idx"].map((e) => stat(path.join(repo.objects, "pack", `${pack}.${e}`))),
    );
    // Same large file (so the same pack), new small files (new loose objects): the second
    // loose object fails.
    await writeFile(path.join(repo.dir, "small-3.txt"), "three\n");
    await writeFile(path.join(repo.dir, "small-4.txt"), "four\n");
    let loose = 0;
    const fs = faultyFs((_from, to) => {
      if (/\/[0-9a-f]{2}\/[0-9a-f]{38}$/.test(to) && ++loose === 2) throw errnoError("ENOSPC", "link", to);
    });
    const error = await rejectionOf(capture(repo, { testHooks: { fs } }));
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    for (const [i, ext] of ["pack", "idx"].entries()) {
      expect((await stat(path.join(repo.objects, "pack", `${pack}.${ext}`))).ino).toBe(inodes[i]!.ino);
    }
    expect((await repo.git(["cat-file", "-s", `${first.value.commit}:a-large.bin`])).trim()).toBe(
      String(bigContent(1).length),
    );
    await fsckStrict(repo);
  });

  it("never removes a pack file that was in the store before this capture linked it", async () => {
    const repo = await repoWithLargeFile();
    const first = await capture(repo);
    const [pack] = first.published.packs;
    // A crashed publisher's leftover: the same .pack, without its index.
    await unlink(path.join(repo.objects, "pack", `${pack}.idx`));
    const leftover = await stat(path.join(repo.objects, "pack", `${pack}.pack`));
    const fs = faultyFs((_from, to) => {
      if (to.endsWith(".idx")) throw errnoError("EIO", "link", to);
    });
    expect((await rejectionOf(capture(repo, { testHooks: { fs } }))).code).toBe(
      "RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED",
    );
    expect((await stat(path.join(repo.objects, "pack", `${pack}.pack`))).ino).toBe(leftover.ino);
    await fsckStrict(repo);
  });
});

describe("two captures publishing the same pack", () => {
  it("keep the surviving capture's pack readable when the other fails mid-publication", async () => {
    const repo = await repoWithLargeFile();
    let bIsWaiting!: () => void;
    const bWaits = new Promise<void>((resolve) => (bIsWaiting = resolve));
    let b: ReturnType<typeof capture> | undefined;
    // A has linked its .pack into the store; before its .idx, B runs all the way to the same
    // pack, finds A owning it and waits. Then A's .idx fails and A compensates.
    const aFs = faultyFs(async (_from, to) => {
      if (!to.endsWith(".idx")) return;
      expect(
        (await readdir(path.dirname(to))).some(
          (n) => n.endsWith(".pack") && to.startsWith(path.join(path.dirname(to), n.slice(0, -5))),
        ),
      ).toBe(true);
      b = capture(repo, { ref: "refs/reclaim/b", testHooks: { onPackBusy: () => bIsWaiting() } });
      await bWaits;
      throw errnoError("ENOSPC", "link", to);
    });
    const a = await rejectionOf(capture(repo, { ref: "refs/reclaim/a", testHooks: { fs: aFs } }));
    expect(a.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    const survivor = await b!;
    const [pack] = survivor.published.packs;
    const files = await packsIn(repo.objects);
    expect(files).toEqual(expect.arrayContaining([`${pack}.pack`, `${pack}.idx`]));
    const commit = (await repo.git(["rev-parse", "refs/reclaim/b"])).trim();
    expect(commit).toBe(survivor.value.commit);
    expect((await repo.git(["cat-file", "-s", `${commit}:a-large.bin`])).trim()).toBe(
      String(bigContent(1).length),
    );
    await expect(repo.git(["rev-parse", "--verify", "-q", "refs/reclaim/a"])).rejects.toThrow();
    await fsckStrict(repo);
    // No ownership record is left behind either.
    expect(await readdir(path.join(repo.objects, "info"))).not.toContain("reclaim-pack-owners");
  });

  it("both succeed when neither fails, concurrently", async () => {
    const repo = await repoWithLargeFile();
    const realIndex = await indexAndHead(repo);
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
    expect(await indexAndHead(repo)).toEqual(realIndex);
    await fsckStrict(repo);
  });
});

describe("pack ownership records", () => {
  it("breaks a record left by a dead process", async () => {
    const pack = (await capture(await repoWithLargeFile(7))).published.packs[0]!;
    const repo = await repoWithLargeFile(7);
    const deadPid = await pidOfExitedProcess();
    await mkdir(path.join(repo.objects, "info", "reclaim-pack-owners"), { recursive: true });
    await writeFile(
      path.join(repo.objects, "info", "reclaim-pack-owners", pack),
      JSON.stringify({ captureId: "crashed", pid: deadPid, host: os.hostname(), startedAt: Date.now() }),
    );
    const { published } = await capture(repo);
    expect(published.packs).toEqual([pack]);
    expect(await readdir(path.join(repo.objects, "info"))).not.toContain("reclaim-pack-owners");
    await fsckStrict(repo);
  });

  it("waits for a live owner, then gives up with a retryable busy error", async () => {
    const pack = (await capture(await repoWithLargeFile(8))).published.packs[0]!;
    const repo = await repoWithLargeFile(8);
    await mkdir(path.join(repo.objects, "info", "reclaim-pack-owners"), { recursive: true });
    await writeFile(
      path.join(repo.objects, "info", "reclaim-pack-owners", pack),
      JSON.stringify({ captureId: "live", pid: process.ppid, host: os.hostname(), startedAt: 1_000 }),
    );
    // Time advances only when the capture waits: each poll moves the clock by its delay.
    let now = 1_000;
    const clock: Clock = { now: () => now };
    const timer: Timer = {
      setTimeout: (callback, ms) => {
        now += ms;
        setImmediate(callback);
        return 0;
      },
      clearTimeout: () => undefined,
    };
    let waits = 0;
    const error = await rejectionOf(
      capture(repo, { clock, timer, packBusyTimeoutMs: 1_000, testHooks: { onPackBusy: () => waits++ } }),
    );
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PACK_BUSY");
    expect(error.permanent).toBe(false);
    expect(waits).toBeGreaterThan(10);
    expect(packFiles(await packsIn(repo.objects))).toEqual([]);
    await fsckStrict(repo);
  });
});

describe("permissions and filesystems", () => {
  it("gives new object directories and files core.sharedRepository permissions, as git does", async () => {
    const repo = await makeRepo();
    await repo.git(["config", "core.sharedRepository", "group"]);
    await writeFile(path.join(repo.dir, "new.txt"), "a new object in a new fan-out directory\n");
    const { value } = await capture(repo);
    const blob = (await repo.git(["rev-parse", `${value.commit}:new.txt`])).trim();
    const published = await stat(path.join(repo.objects, blob.slice(0, 2)));
    // What git itself gives a fan-out directory it creates in this repository.
    const own = (await repo.git(["hash-object", "-w", "--stdin"], "made by git itself, elsewhere\n")).trim();
    const byGit = await stat(path.join(repo.objects, own.slice(0, 2)));
    expect(published.mode & 0o7777).toBe(byGit.mode & 0o7777);
    expect(published.mode & 0o2070).toBe(0o2070);
    const file = await stat(path.join(repo.objects, blob.slice(0, 2), blob.slice(2)));
    expect(file.mode & 0o070).toBe(0o040);
    await fsckStrict(repo);
  });

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
});

async function pidOfExitedProcess(): Promise<number> {
  const child = execFile("true");
  const pid = child.pid!;
  await new Promise((resolve) => child.on("exit", resolve));
  return pid;
}
