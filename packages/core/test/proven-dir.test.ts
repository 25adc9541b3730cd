/**
 * Below a configured top folder nothing is followed, read through or written through
 * (packages/core/src/fs/proven-dir.ts): a level that is a symlink is refused when it is
 * reached, and one replaced by a link after it was proven is refused before a listing, a
 * read, a write or a rename goes through it. Each target is a directory outside the tree
 * whose listing, times, contents and access times are compared before and after.
 */
import { execFileSync } from "node:child_process";
import fs, { existsSync, renameSync, symlinkSync } from "node:fs";
import { mkdir, readdir, rename, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  ensureDirBelow,
  forgetListings,
  fromListing,
  PathRefused,
  ProvenDir,
  provenDirBelow,
  REUSED_LISTING_MIN_ENTRIES,
  UNCHANGED_MARGIN_MS,
} from "@reclaim/core";
import { outsideDir, tempDir, type Outside } from "@reclaim/testkit";

let root: { path: string; remove(): Promise<void> };
let outside: Outside;
beforeEach(async () => {
  root = await tempDir("reclaim-proven-");
  outside = await outsideDir({ "b/entry/file": "outside", "b/state.json": "{}", marker: "" });
});
afterEach(async () => {
  await root.remove();
  await outside.remove();
});

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PathRefused) return `${error.reason} ${path.relative(root.path, error.at)}`;
    throw error;
  }
  return "accepted";
}

describe("a level below the top folder that is a symlink", () => {
  it("is refused when it is reached, and nothing in its target is read", async () => {
    await symlink(outside.path, path.join(root.path, "a"));
    const top = (await ProvenDir.top(root.path))!;
    expect(await refusal(top.child("a"))).toBe("symlink a");
    expect((await top.list()).map((e) => [e.name, e.isSymbolicLink()])).toEqual([["a", true]]);
    expect(await outside.changes()).toEqual([]);
  });

  it("is refused at any depth (a file in its place is not a directory)", async () => {
    await mkdir(path.join(root.path, "a"));
    await symlink(path.join(outside.path, "b"), path.join(root.path, "a", "b"));
    await writeFile(path.join(root.path, "a", "f"), "x");
    const a = (await (await ProvenDir.top(root.path))!.child("a"))!;
    expect(await refusal(a.child("b"))).toBe("symlink a/b");
    expect(await refusal(a.child("f"))).toBe("not_a_directory a/f");
    expect(await a.child("missing")).toBeNull();
    expect(await outside.changes()).toEqual([]);
  });
});

describe("an entry's lstat", () => {
  it("is null for an entry that is not there, or below a file, and the link itself for a link", async () => {
    await writeFile(path.join(root.path, "f"), "x");
    await symlink(outside.path, path.join(root.path, "l"));
    const top = (await ProvenDir.top(root.path))!;
    expect(await top.lstatEntry("missing")).toBeNull();
    expect(await top.lstatEntry("f/below-a-file")).toBeNull();
    expect((await top.lstatEntry("f"))?.isFile()).toBe(true);
    expect((await top.lstatEntry("l"))?.isSymbolicLink()).toBe(true);
  });
});

describe("the top folder is taken as configured", () => {
  it("a top folder that is a symlink (another disk) is followed", async () => {
    await mkdir(path.join(root.path, "disk", "a"), { recursive: true });
    await symlink(path.join(root.path, "disk"), path.join(root.path, "top"));
    const top = (await ProvenDir.top(path.join(root.path, "top")))!;
    expect((await top.list()).map((e) => e.name)).toEqual(["a"]);
    expect(await top.child("a")).not.toBeNull();
    expect(await ProvenDir.top(path.join(root.path, "none"))).toBeNull();
  });
});

describe("a level replaced by a symlink after it was proven", () => {
  let b: ProvenDir;
  beforeEach(async () => {
    await mkdir(path.join(root.path, "a", "b", "entry"), { recursive: true });
    await writeFile(path.join(root.path, "a", "b", "state.json"), "{}");
    b = (await (await (await ProvenDir.top(root.path))!.child("a"))!.child("b"))!;
    // Swapped: `a` moved away, a link to a tree of the same shape outside in its place.
    await rename(path.join(root.path, "a"), path.join(root.path, "a-moved"));
    await symlink(outside.path, path.join(root.path, "a"));
  });

  it("refuses to list, read, create, make a directory or rename through it", async () => {
    expect(await refusal(b.list())).toBe("path_changed a/b");
    expect(await refusal(b.readFile("state.json", 1024))).toBe("path_changed a/b");
    expect(await refusal(b.createFile("marker", "x", new Date()))).toBe("path_changed a/b");
    expect(await refusal(b.ensureDir("made"))).toBe("path_changed a/b");
    expect(await refusal(b.rename("entry", "renamed"))).toBe("path_changed a/b");
    expect(await refusal(b.recheck())).toBe("symlink a");
    expect(await outside.changes()).toEqual([]);
  });
});

describe("a settled directory (settledChild): one confirm after a read stands for every level", () => {
  // `a` moved away, a link to a tree of the same shape outside in its place (outside has `b`).
  const swapA = async () => {
    await rename(path.join(root.path, "a"), path.join(root.path, "a-moved"));
    await symlink(outside.path, path.join(root.path, "a"));
  };
  /** The same, from inside a synchronous listing. */
  const swapASync = () => {
    renameSync(path.join(root.path, "a"), path.join(root.path, "a-moved"));
    symlinkSync(outside.path, path.join(root.path, "a"));
  };
  /** What changed outside, reads aside (a path-based read is refused after it, not before). */
  const written = async () => (await outside.changes()).filter((change) => !change.endsWith(": read"));
  beforeEach(async () => {
    await mkdir(path.join(root.path, "a", "b", "entry"), { recursive: true });
  });
  afterEach(() => jest.restoreAllMocks());

  it("a level swapped for a link before its child is proven: the child is refused, nothing outside read", async () => {
    const a = (await (await ProvenDir.top(root.path))!.settledChild("a"))!;
    await swapA();
    // The child's lstat went through the link (to outside's `b`); the confirm of `a` after it refuses.
    expect(await refusal(a.settledChild("b"))).toBe("symlink a");
    expect(await outside.changes()).toEqual([]);
    // child() alone proves one level, here outside's `b`: unsettled, its listing rechecks
    // every level after the readdir (went through the link) and refuses it.
    const b = (await a.child("b"))!;
    expect(await refusal(b.list())).toBe("symlink a");
    expect(await written()).toEqual([]);
  });

  it("a level above swapped for a link before a settled listing: refused by the confirm before it, nothing outside read", async () => {
    const b = (await (await (await ProvenDir.top(root.path))!.settledChild("a"))!.settledChild("b"))!;
    expect((await b.list()).map((e) => e.name)).toEqual(["entry"]);
    await swapA();
    expect(await refusal(b.list())).toBe("path_changed a/b");
    expect(await outside.changes()).toEqual([]);
  });

  it("a level above swapped for a link during a settled listing: the listing is refused by the confirm after it", async () => {
    const b = (await (await (await ProvenDir.top(root.path))!.settledChild("a"))!.settledChild("b"))!;
    const readdirOf = fs.readdirSync;
    jest.spyOn(fs, "readdirSync").mockImplementation(((...args: Parameters<typeof readdirOf>) => {
      // Right before the readdir, after the confirm that precedes it.
      if (args[0] === b.path) swapASync();
      return readdirOf(...args);
    }) as typeof readdirOf);
    expect(await refusal(b.list())).toBe("path_changed a/b");
    expect(await written()).toEqual([]);
  });

  it("reads without a confirm around each are refused by the one confirm after them", async () => {
    await writeFile(path.join(root.path, "a", "b", "state.json"), "{}");
    const b = (await (await (await ProvenDir.top(root.path))!.settledChild("a"))!.settledChild("b"))!;
    await swapA();
    // Through the link: outside's `b` holds a state.json too. Read, then refused.
    expect((await b.readFileUnconfirmed("state.json", 1024)).status).toBe("ok");
    expect((await b.listUnconfirmed()).map((e) => e.name).sort()).toEqual(["entry", "state.json"]);
    expect(await refusal(b.confirm())).toBe("path_changed a/b");
    expect(await written()).toEqual([]);
  });
});

describe("writing in a proven directory never goes through a link at the name", () => {
  it("createFile does not write through a symlink or over an existing file; ensureDir refuses a link", async () => {
    const top = (await ProvenDir.top(root.path))!;
    await symlink(path.join(outside.path, "marker"), path.join(root.path, "marker"));
    await symlink(path.join(outside.path, "new-file"), path.join(root.path, "dangling"));
    await symlink(path.join(outside.path, "b"), path.join(root.path, "dir"));
    await expect(top.createFile("marker", "x", new Date())).rejects.toMatchObject({ code: "EEXIST" });
    await expect(top.createFile("dangling", "x", new Date())).rejects.toMatchObject({ code: "EEXIST" });
    expect(await refusal(top.ensureDir("dir"))).toBe("symlink dir");
    expect(await outside.changes()).toEqual([]);
    expect(existsSync(path.join(outside.path, "new-file"))).toBe(false);

    const when = new Date("2020-05-05T00:00:00Z");
    await top.createFile("made", "content", when);
    const made = await top.lstatEntry("made");
    expect(made!.mtime.getTime()).toBe(when.getTime());
    expect((await top.ensureDir("sub")).path).toBe(path.join(root.path, "sub"));
  });

  it("reads a file only when it is a regular file within the limit, never through a link", async () => {
    const top = (await ProvenDir.top(root.path))!;
    await symlink(path.join(outside.path, "b", "state.json"), path.join(root.path, "state.json"));
    await writeFile(path.join(root.path, "big.json"), Buffer.alloc(2048, 32));
    execFileSync("mkfifo", [path.join(root.path, "fifo")]);
    expect(await top.readFile("state.json", 1024)).toEqual({ status: "symlink" });
    expect(await top.readFile("big.json", 1024)).toEqual({ status: "too_large" });
    expect(await top.readFile("fifo", 1024)).toEqual({ status: "not_a_file" });
    expect(await top.readFile("missing", 1024)).toEqual({ status: "missing" });
    expect(await outside.changes()).toEqual([]);
    expect((await readdir(root.path)).sort()).toEqual(["big.json", "fifo", "state.json"]);
  });
});

describe("a path deep below the top folder (proven-path.ts)", () => {
  it("is reached level by level: a link on the way makes it unsafe, and ensureDirBelow creates nothing through it", async () => {
    await mkdir(path.join(root.path, "a", "b"), { recursive: true });
    expect(await provenDirBelow(root.path, path.join(root.path, "a", "b"))).toBeInstanceOf(ProvenDir);
    expect(await provenDirBelow(root.path, path.join(root.path, "a", "none"))).toBe("missing");
    expect(await provenDirBelow(root.path, root.path)).toBe("unsafe");
    expect(await provenDirBelow(root.path, path.dirname(root.path))).toBe("unsafe");
    await symlink(outside.path, path.join(root.path, "a", "link"));
    expect(await provenDirBelow(root.path, path.join(root.path, "a", "link", "b"))).toBe("unsafe");
    expect(await ensureDirBelow(root.path, path.join(root.path, "a", "link", "new", "deeper"))).toBe(
      "unsafe",
    );
    const made = await ensureDirBelow(root.path, path.join(root.path, "a", "c", "d"));
    expect(made).toBeInstanceOf(ProvenDir);
    expect(existsSync(path.join(root.path, "a", "c", "d"))).toBe(true);
    expect(await outside.changes()).toEqual([]);
  });
});

describe("a large directory's listing is reused while the directory is unchanged (listings.ts)", () => {
  const readdirOf = fs.readdirSync;
  /** readdir calls of `dir` since the last call. */
  let reads: (dir: string) => number;
  /** Date.now() ahead of the filesystem's clock: a directory just made looks settled long ago. */
  const later = (ms: number) => {
    const now = Date.now;
    jest.spyOn(Date, "now").mockImplementation(() => now.call(Date) + ms);
  };
  beforeEach(() => {
    const calls = new Map<string, number>();
    jest.spyOn(fs, "readdirSync").mockImplementation(((...args: Parameters<typeof readdirOf>) => {
      calls.set(String(args[0]), (calls.get(String(args[0])) ?? 0) + 1);
      return readdirOf(...args);
    }) as typeof readdirOf);
    reads = (dir) => {
      const n = calls.get(dir) ?? 0;
      calls.delete(dir);
      return n;
    };
  });
  afterEach(() => {
    jest.restoreAllMocks();
    forgetListings();
  });
  const fill = async (dir: string, count: number) => {
    await mkdir(dir, { recursive: true });
    await Promise.all(Array.from({ length: count }, (_, i) => writeFile(path.join(dir, `e${i}`), "")));
  };
  const names = async (dir: ProvenDir) => (await dir.list()).map((e) => e.name).sort();

  it("an unchanged directory is read once, and every change of its entries is seen at the next listing", async () => {
    const at = path.join(root.path, "big");
    await fill(at, REUSED_LISTING_MIN_ENTRIES);
    later(UNCHANGED_MARGIN_MS + 1000);
    const big = (await (await ProvenDir.top(root.path))!.settledChild("big"))!;
    const first = await names(big);
    expect(first).toHaveLength(REUSED_LISTING_MIN_ENTRIES);
    expect(await names(big)).toEqual(first);
    expect(await names(big)).toEqual(first);
    expect(reads(at)).toBe(1);

    // Each change is read at the next listing (which is kept in turn: the clock is ahead).
    const changes: [string, () => Promise<unknown>, (list: string[]) => boolean][] = [
      ["created", () => writeFile(path.join(at, "new"), ""), (l) => l.includes("new")],
      ["removed", () => fs.promises.unlink(path.join(at, "e0")), (l) => !l.includes("e0")],
      [
        "renamed within",
        () => rename(path.join(at, "e1"), path.join(at, "e1-renamed")),
        (l) => l.includes("e1-renamed") && !l.includes("e1"),
      ],
      [
        "moved in",
        async () => {
          await writeFile(path.join(root.path, "from-outside"), "");
          await rename(path.join(root.path, "from-outside"), path.join(at, "moved-in"));
        },
        (l) => l.includes("moved-in"),
      ],
      ["moved out", () => rename(path.join(at, "e2"), path.join(root.path, "e2")), (l) => !l.includes("e2")],
    ];
    for (const [what, change, seen] of changes) {
      await change();
      expect([what, seen(await names(big)), seen(await names(big)), reads(at)]).toEqual([
        what,
        true,
        true,
        1,
      ]);
    }
  });

  it("a change that sets the directory's times back (utimes) is seen: its ctime moved", async () => {
    const at = path.join(root.path, "big");
    await fill(at, REUSED_LISTING_MIN_ENTRIES);
    const { atime, mtime } = await fs.promises.stat(at);
    later(UNCHANGED_MARGIN_MS + 1000);
    const big = (await ProvenDir.top(at))!;
    await big.list();
    await writeFile(path.join(at, "planted"), "");
    await fs.promises.utimes(at, atime, mtime);
    expect(await names(big)).toContain("planted");
    expect(reads(at)).toBe(2);
  });

  it("what a caller makes of a reused listing is made once (fromListing), and again for a new listing", async () => {
    const at = path.join(root.path, "big");
    await fill(at, REUSED_LISTING_MIN_ENTRIES);
    later(UNCHANGED_MARGIN_MS + 1000);
    const big = (await ProvenDir.top(at))!;
    let made = 0;
    const sorted = async () =>
      fromListing(await big.list(), "test names", (entries) => {
        made += 1;
        return entries.map((e) => e.name).sort();
      });
    const first = await sorted();
    expect(await sorted()).toBe(first);
    await writeFile(path.join(at, "new"), "");
    expect(await sorted()).toContain("new");
    expect(made).toBe(2);
  });

  it("a listing read within the margin of the directory's last change is not reused (the same clock tick)", async () => {
    const at = path.join(root.path, "big");
    await fill(at, REUSED_LISTING_MIN_ENTRIES);
    const big = (await ProvenDir.top(at))!;
    await big.list();
    await big.list();
    expect(reads(at)).toBe(2);
  });

  it("a small directory is read every time", async () => {
    const at = path.join(root.path, "small");
    await fill(at, REUSED_LISTING_MIN_ENTRIES - 1);
    later(UNCHANGED_MARGIN_MS + 1000);
    const small = (await ProvenDir.top(at))!;
    await small.list();
    await small.list();
    expect(reads(at)).toBe(2);
  });

  it("another directory put at the same path is read", async () => {
    const at = path.join(root.path, "big");
    await fill(at, REUSED_LISTING_MIN_ENTRIES);
    await fill(path.join(root.path, "other"), REUSED_LISTING_MIN_ENTRIES);
    await writeFile(path.join(root.path, "other", "only-in-other"), "");
    later(UNCHANGED_MARGIN_MS + 1000);
    const top = (await ProvenDir.top(root.path))!;
    const big = (await top.settledChild("big"))!;
    await big.list();
    await rename(at, path.join(root.path, "big-moved"));
    await rename(path.join(root.path, "other"), at);
    // The confirm before the listing refuses the other directory; proven again, it is read.
    expect(await refusal(big.list())).toBe("path_changed big");
    expect(await names((await top.settledChild("big"))!)).toContain("only-in-other");
    expect(reads(at)).toBe(2);
  });

  it("an unsettled directory's reused listing still rechecks every level: a level swapped for a link to it is refused", async () => {
    const at = path.join(root.path, "a", "b");
    await fill(at, REUSED_LISTING_MIN_ENTRIES);
    later(UNCHANGED_MARGIN_MS + 1000);
    const prove = async () => (await (await (await ProvenDir.top(root.path))!.child("a"))!.child("b"))!;
    await (await prove()).list(); // kept (and that `b` settled by its recheck)
    const unsettled = await prove();
    // `a` moved, a link to it in its place: the path still leads to the very same `b`.
    await rename(path.join(root.path, "a"), path.join(root.path, "a-moved"));
    await symlink(path.join(root.path, "a-moved"), path.join(root.path, "a"));
    expect(await refusal(unsettled.list())).toBe("symlink a");
    expect(reads(at)).toBe(1);
  });
});
