/**
 * Pack ownership records (pack-ownership.ts) and recovery (pack-recovery.ts): who may break
 * a record, bounded waits, release, the race against a real second process, and the orphan
 * a capture killed with SIGKILL between `.pack` and `.idx` leaves behind.
 */
import { mkdir, readdir, rename, stat, unlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { realPublishFs, type PublishFs } from "../../src";
import {
  acquirePackOwnership,
  INSTANCE,
  tryAcquirePackOwnership,
  type OwnershipOptions,
} from "../../src/quarantine/pack-ownership";
import { currentProcess } from "../../src/quarantine/process-identity";
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
} from "./git-fixture";
import {
  expectBroken,
  expectBusy,
  gatedFs,
  isRecord,
  packNameFor,
  pidOfExitedProcess,
  smallCapture,
  waitingClock,
} from "./ownership-fixture";
import { liveIdentity, ownerEntries, ownersDir, plantRecord, readRecord } from "./owners";
import { startPublisher, stopPublishers } from "./publisher";
import { rejectionOf } from "../rejection";

afterEach(async () => {
  stopPublishers();
  await cleanup();
});

describe("who may break an ownership record", () => {
  it("a capture never breaks a live record held by another capture of its own process", async () => {
    const repo = await repoWithLargeFile(3);
    // A stops right after its record exists (before anything else of its publication).
    const a = gatedFs((call, target) => call === "createExclusive" && isRecord(target));
    const first = capture(repo, { ref: "refs/reclaim/a", testHooks: { fs: a.fs } });
    const record = await a.stopped;
    const held = {
      ino: (await stat(record)).ino,
      lockId: (await readRecord(repo, path.basename(record))).lockId,
    };
    expect((await readRecord(repo, path.basename(record))).pid).toBe(process.pid);
    let bWaits!: () => void;
    const bIsWaiting = new Promise<void>((resolve) => (bWaits = resolve));
    const second = capture(repo, { ref: "refs/reclaim/b", testHooks: { onPackBusy: () => bWaits() } });
    await bIsWaiting;
    // B saw the record of its own pid and waited: the record is still A's.
    expect((await stat(record)).ino).toBe(held.ino);
    expect((await readRecord(repo, path.basename(record))).lockId).toBe(held.lockId);
    a.open();
    const [one, two] = await Promise.all([first, second]);
    expect(one.published.packs).toEqual(two.published.packs);
    expect(await ownerEntries(repo)).toBeNull();
    await fsckStrict(repo);
  });

  it.each([
    ["a process that has exited", async () => ({ pid: await pidOfExitedProcess() })],
    ["a pid that now belongs to another process", async () => ({ pid: process.ppid, pidStart: "1" })],
    [
      "this process, for a record none of its captures holds (a failed release)",
      async () => ({ ...currentProcess(), instance: INSTANCE }),
    ],
  ])("breaks a record of %s", async (_case, holder) => {
    await expectBroken(7, await holder());
  });

  it("waits for a live process, then gives up with a retryable busy error", async () => {
    await expectBusy(8, await liveIdentity(process.ppid));
  });

  it("never breaks a live record of another copy of the module in this process (a worker thread, a second bundle)", async () => {
    const repo = await makeRepo();
    const pack = `pack-${"1".repeat(40)}`;
    const options = (captureId: string, waits = waitingClock()): OwnershipOptions => ({
      fs: realPublishFs,
      ...waits,
      shared: 0,
      captureId,
      busyTimeoutMs: 1_000,
      staleAfterMs: 600_000,
    });
    const first = await acquirePackOwnership(repo.objects, pack, options("first"));
    let copy!: typeof import("../../src/quarantine/pack-ownership");
    await jest.isolateModulesAsync(async () => {
      copy = await import("../../src/quarantine/pack-ownership");
    });
    expect(copy.INSTANCE).not.toBe(INSTANCE);
    // Same pid and start time, but the record is not in the copy's registry: still live.
    expect(await copy.tryAcquirePackOwnership(repo.objects, pack, options("second"))).toBeNull();
    const error = await copy.acquirePackOwnership(repo.objects, pack, options("second")).then(
      () => null,
      (e: unknown) => e as { code?: string },
    );
    expect(error?.code).toBe("RECLAIM_ERR_QUARANTINE_PACK_BUSY");
    expect(await first.held()).toBe(true);
    await first.release();
    const second = await copy.acquirePackOwnership(repo.objects, pack, options("second"));
    expect(second.tookOverAbandoned).toBe(false);
    expect(await tryAcquirePackOwnership(repo.objects, pack, options("third"))).toBeNull();
    await second.release();
    expect(await ownerEntries(repo)).toBeNull();
  });

  it("bounds the wait for another capture of this process with a retryable busy error", async () => {
    const repo = await repoWithLargeFile(9);
    const a = gatedFs((call, target) => call === "link" && target.endsWith(".idx"));
    const first = capture(repo, { testHooks: { fs: a.fs } });
    await a.stopped;
    const { clock, timer } = waitingClock();
    const error = await rejectionOf(capture(repo, { clock, timer, packBusyTimeoutMs: 1_000 }));
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PACK_BUSY");
    expect(error.permanent).toBe(false);
    a.open();
    expect((await first).published.packs).toHaveLength(1);
    expect(await ownerEntries(repo)).toBeNull();
    await fsckStrict(repo);
  });

  it("breaks the break lock of a breaker that died, then the dead record it guarded", async () => {
    const pack = await packNameFor(10);
    const repo = await repoWithLargeFile(10);
    const dead = await pidOfExitedProcess();
    const record = await plantRecord(repo, pack, { pid: dead });
    await plantRecord(repo, `${pack}.break-${record.lockId}`, { pid: dead });
    const { published } = await capture(repo);
    expect(published.packs).toEqual([pack]);
    expect(await ownerEntries(repo)).toBeNull();
    await fsckStrict(repo);
  });

  it("never removes a dead record while a live breaker holds its break lock", async () => {
    const pack = await packNameFor(10);
    const repo = await repoWithLargeFile(10);
    const record = await plantRecord(repo, pack, { pid: await pidOfExitedProcess() });
    const breaker = `${pack}.break-${record.lockId}`;
    await plantRecord(repo, breaker, await liveIdentity(process.ppid));
    const before = (await stat(path.join(ownersDir(repo), pack))).ino;
    const { clock, timer } = waitingClock();
    const error = await rejectionOf(capture(repo, { clock, timer, packBusyTimeoutMs: 1_000 }));
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PACK_BUSY");
    expect(await ownerEntries(repo)).toEqual([pack, breaker]);
    expect((await stat(path.join(ownersDir(repo), pack))).ino).toBe(before);
    await fsckStrict(repo);
  });
});

describe("breaking a dead record", () => {
  it("replaces it in one step, so another process never takes the pack without recovering it", async () => {
    const pack = await packNameFor(11);
    const repo = await repoWithLargeFile(11);
    // A capture died right after reserving `.pack` with the rename fallback: an empty
    // placeholder, invisible to git, guarded by its record.
    await writeFile(path.join(repo.objects, "pack", `${pack}.pack`), "");
    await plantRecord(repo, pack, { pid: await pidOfExitedProcess() });
    // This capture breaks that record and stops as it drops the break lock.
    const x = gatedFs(
      (call, target) => call === "unlink" && path.basename(target).startsWith(`${pack}.break-`),
    );
    const running = capture(repo, { ref: "refs/reclaim/x", testHooks: { fs: x.fs } });
    await x.stopped;
    expect((await readRecord(repo, pack)).pid).toBe(process.pid);
    // A second process reaching the pack now finds it held, not free.
    const z = startPublisher(repo, { ref: "refs/reclaim/z" });
    await z.line("busy");
    x.open();
    expect((await running).published.recoveredPacks).toEqual([pack]);
    expect(await z.exited).toBe(0);
    const commits = [(await running).value.commit, (await z.line("commit ")).slice("commit ".length)];
    for (const commit of commits) {
      expect((await repo.git(["cat-file", "-s", `${commit}:a-large.bin`])).trim()).toBe(
        String(bigContent(11).length),
      );
    }
    await repo.git(["verify-pack", path.join(repo.objects, "pack", `${pack}.idx`)]);
    expect(await ownerEntries(repo)).toBeNull();
    await fsckStrict(repo);
  });

  it("leaves an unreadable record whose inode became a fresh record while it took the break lock", async () => {
    const pack = await packNameFor(12);
    const repo = await repoWithLargeFile(12);
    // A record a crash left empty, an hour ago: dead by its age, named by its inode.
    const record = path.join(ownersDir(repo), pack);
    await mkdir(ownersDir(repo), { recursive: true });
    await writeFile(record, "");
    const anHourAgo = new Date(Date.now() - 3_600_000);
    await utimes(record, anHourAgo, anHourAgo);
    const ino = (await stat(record)).ino;
    const x = gatedFs(
      (call, target) => call === "createExclusive" && path.basename(target) === `${pack}.break-ino${ino}`,
    );
    const { clock, timer } = waitingClock();
    const running = capture(repo, { clock, timer, packBusyTimeoutMs: 1_000, testHooks: { fs: x.fs } });
    await x.stopped;
    // Meanwhile the inode became a new capture's record, still being written: fresh.
    const now = new Date();
    await utimes(record, now, now);
    x.open();
    expect((await rejectionOf(running)).code).toBe("RECLAIM_ERR_QUARANTINE_PACK_BUSY");
    expect((await stat(record)).ino).toBe(ino);
    expect(await packsIn(repo.objects)).toEqual([]);
  });
});

describe("a capture that no longer owns its pack", () => {
  it("does not remove the record it failed to make durable once the name is another capture's", async () => {
    const repo = await repoWithLargeFile(15);
    let theirs: { name: string; lockId: string } | undefined;
    const fs: PublishFs = {
      ...realPublishFs,
      syncDir: async (target) => {
        if (theirs === undefined && path.basename(target) === "reclaim-pack-owners") {
          // This capture's record exists; before it is durable the name changes hands (a
          // new file renamed over it: another inode).
          const [name] = (await readdir(target)).filter((n) => !n.includes("."));
          const record = await plantRecord(repo, `${name}.theirs`, { pid: 1, bootId: "another-machine" });
          await rename(path.join(target, `${name}.theirs`), path.join(target, name!));
          theirs = { name: name!, lockId: record.lockId };
          throw errnoError("EIO", "fsync", target);
        }
        return realPublishFs.syncDir(target);
      },
    };
    const error = await rejectionOf(capture(repo, { testHooks: { fs } }));
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    expect(error.message).toContain("EIO");
    expect((await readRecord(repo, theirs!.name)).lockId).toBe(theirs!.lockId);
  });

  it("neither releases the record nor removes the pack files it linked", async () => {
    const repo = await repoWithLargeFile(13);
    const a = gatedFs((call, target) => call === "link" && target.endsWith(".idx"));
    const running = capture(repo, { ref: "refs/reclaim/lost", testHooks: { fs: a.fs } });
    const index = await a.stopped;
    const pack = path.basename(index, ".idx");
    // Another host broke A's record by age and took the pack: the name is theirs now.
    await unlink(path.join(ownersDir(repo), pack));
    const theirs = await plantRecord(repo, pack, { pid: 1, bootId: "another-machine", host: "elsewhere" });
    a.open(errnoError("ENOSPC", "link", index));
    expect((await rejectionOf(running)).code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    expect((await readRecord(repo, pack)).lockId).toBe(theirs.lockId);
    expect(await packsIn(repo.objects)).toEqual([`${pack}.pack`]); // may be theirs to adopt now
    await fsckStrict(repo);
  });

  it("does not publish the index of a pack whose record was taken over meanwhile", async () => {
    const repo = await repoWithLargeFile(14);
    const a = gatedFs((call, target) => call === "link" && target.endsWith(".pack"));
    const running = capture(repo, { ref: "refs/reclaim/lost", testHooks: { fs: a.fs } });
    const pack = path.basename(await a.stopped, ".pack");
    await unlink(path.join(ownersDir(repo), pack));
    const theirs = await plantRecord(repo, pack, { pid: 1, bootId: "another-machine", host: "elsewhere" });
    a.open();
    const error = await rejectionOf(running);
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    expect(error.message).toContain("taken over");
    expect((await readRecord(repo, pack)).lockId).toBe(theirs.lockId);
    expect(await packsIn(repo.objects)).toEqual([`${pack}.pack`]);
    await expect(repo.git(["rev-parse", "--verify", "-q", "refs/reclaim/lost"])).rejects.toThrow();
    await fsckStrict(repo);
  });
});

describe("two processes publishing the same pack", () => {
  it("keep the other process's pack readable when this capture fails on its index (ENOSPC)", async () => {
    const repo = await repoWithLargeFile(21);
    const realFiles = await indexAndHead(repo);
    let other: ReturnType<typeof startPublisher> | undefined;
    // This capture has linked its .pack; before its .idx, a second process captures the same
    // content, reaches the same pack, finds it owned by this process and waits. Then this
    // capture's index fails and it compensates.
    const fs: PublishFs = {
      ...realPublishFs,
      link: async (from, to) => {
        if (to.endsWith(".idx")) {
          other = startPublisher(repo, { ref: "refs/reclaim/other" });
          await other.line("busy");
          throw errnoError("ENOSPC", "link", to);
        }
        return realPublishFs.link(from, to);
      },
    };
    const error = await rejectionOf(capture(repo, { ref: "refs/reclaim/this", testHooks: { fs } }));
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED");
    expect(await other!.exited).toBe(0);
    const commit = (await other!.line("commit ")).slice("commit ".length);
    expect((await repo.git(["rev-parse", "refs/reclaim/other"])).trim()).toBe(commit);
    expect((await repo.git(["cat-file", "-s", `${commit}:a-large.bin`])).trim()).toBe(
      String(bigContent(21).length),
    );
    const pack = (await packsIn(repo.objects)).filter((n) => n.endsWith(".idx"));
    expect(pack).toHaveLength(1);
    await repo.git(["verify-pack", path.join(repo.objects, "pack", pack[0]!)]);
    await expect(repo.git(["rev-parse", "--verify", "-q", "refs/reclaim/this"])).rejects.toThrow();
    expect(await ownerEntries(repo)).toBeNull();
    expect(await indexAndHead(repo)).toEqual(realFiles);
    await fsckStrict(repo);
  });
});

describe("recovery of a publication abandoned by a dead capture", () => {
  it("removes the .keep, .pack and .rev a capture killed before its .idx left, at the next publication", async () => {
    const repo = await repoWithLargeFile(31);
    const realFiles = await indexAndHead(repo);
    const killed = startPublisher(repo, { packing: "keep-rev", at: "idx", action: "kill" });
    const at = await killed.line("at ");
    expect(await killed.exited).toBe("SIGKILL");
    const pack = path.basename(at.slice("at ".length), ".idx");
    expect(await packsIn(repo.objects)).toEqual([`${pack}.keep`, `${pack}.pack`, `${pack}.rev`]);
    expect((await readRecord(repo, pack)).pid).toBe(killed.pid);
    // Any later publication, here one of a single loose object, recovers it first.
    const { published } = await smallCapture(repo, "anything\n");
    expect(published.recoveredPacks).toEqual([pack]);
    expect(await packsIn(repo.objects)).toEqual([]);
    expect(await ownerEntries(repo)).toBeNull();
    expect(await indexAndHead(repo)).toEqual(realFiles);
    await fsckStrict(repo);
    // The same content still publishes completely afterwards.
    const again = await capture(repo, { packing: "keep-rev" });
    expect(again.published.packs).toHaveLength(1); // another commit, so another pack name
    expect((await repo.git(["cat-file", "-s", `${again.value.commit}:a-large.bin`])).trim()).toBe(
      String(bigContent(31).length),
    );
    await fsckStrict(repo);
  });

  it("goes on when a pack cannot be recovered (EIO): reported, its record left for a later publication", async () => {
    const repo = await makeRepo();
    const pack = `pack-${"2".repeat(40)}`;
    const leftover = path.join(repo.objects, "pack", `${pack}.pack`);
    await writeFile(leftover, "the .pack of a capture that died before its .idx");
    await plantRecord(repo, pack, { pid: await pidOfExitedProcess() });
    const failing: PublishFs = {
      ...realPublishFs,
      unlink: async (target) => {
        if (target === leftover) throw errnoError("EIO", "unlink", target);
        return realPublishFs.unlink(target);
      },
    };
    const { value, published } = await smallCapture(repo, "published anyway\n", failing);
    await repo.git(["cat-file", "-e", value.trim()]);
    expect(published.recoveredPacks).toEqual([]);
    expect(published.recoveryFailures).toEqual([{ pack, reason: expect.stringContaining("EIO") }]);
    expect(await packsIn(repo.objects)).toEqual([`${pack}.pack`]);
    expect(await ownerEntries(repo)).toEqual([pack]);
    // The next publication recovers it.
    const again = await smallCapture(repo, "later\n");
    expect(again.published.recoveredPacks).toEqual([pack]);
    expect(again.published.recoveryFailures).toEqual([]);
    expect(await packsIn(repo.objects)).toEqual([]);
    expect(await ownerEntries(repo)).toBeNull();
    await fsckStrict(repo);
  });

  it("marks the record a failed compensation leaves, so another process recovers the pack at once", async () => {
    const repo = await repoWithLargeFile(33);
    let pack = "";
    const fs: PublishFs = {
      ...realPublishFs,
      link: async (from, to) => {
        if (!to.endsWith(".idx")) return realPublishFs.link(from, to);
        pack = path.basename(to, ".idx");
        throw errnoError("ENOSPC", "link", to);
      },
      unlink: async (target) => {
        if (pack && target === path.join(repo.objects, "pack", `${pack}.pack`)) {
          throw errnoError("EIO", "unlink", target);
        }
        return realPublishFs.unlink(target);
      },
    };
    expect((await rejectionOf(capture(repo, { testHooks: { fs } }))).code).toBe(
      "RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED",
    );
    const left = await readRecord(repo, pack);
    expect([left.pid, left.abandoned]).toEqual([process.pid, true]);
    expect(await packsIn(repo.objects)).toEqual([`${pack}.pack`]);
    // This process still runs: only the mark lets another process recover the pack now.
    const other = startPublisher(repo, { ref: "refs/reclaim/other", packBusyTimeoutMs: 1_000 });
    expect(await other.exited).toBe(0);
    expect(await other.line("recovered ")).toBe(`recovered ${pack}`);
    await repo.git(["verify-pack", path.join(repo.objects, "pack", `${pack}.idx`)]);
    expect(await ownerEntries(repo)).toBeNull();
    await fsckStrict(repo);
  });

  it("marks a record whose release failed, so another process may take the pack at once", async () => {
    const repo = await repoWithLargeFile(34);
    let failed = false;
    const fs: PublishFs = {
      ...realPublishFs,
      unlink: async (target) => {
        if (failed || !isRecord(target)) return realPublishFs.unlink(target);
        failed = true;
        throw errnoError("EIO", "unlink", target);
      },
    };
    const error = await rejectionOf(capture(repo, { testHooks: { fs } }));
    expect(error.message).toMatch(/releasing ownership.*EIO/);
    const [pack] = (await ownerEntries(repo))!;
    expect((await readRecord(repo, pack!)).abandoned).toBe(true);
    const other = startPublisher(repo, { ref: "refs/reclaim/other", packBusyTimeoutMs: 1_000 });
    expect(await other.exited).toBe(0);
    expect(await ownerEntries(repo)).toBeNull();
    await fsckStrict(repo);
  });

  it("leaves a pack alone while its live owner is publishing it", async () => {
    const repo = await repoWithLargeFile(32);
    const a = gatedFs((call, target) => call === "link" && target.endsWith(".idx"));
    const running = capture(repo, { testHooks: { fs: a.fs } });
    const pack = path.basename(await a.stopped, ".idx");
    const { published } = await smallCapture(repo, "meanwhile\n");
    expect(published.recoveredPacks).toEqual([]);
    expect(await packsIn(repo.objects)).toEqual([`${pack}.pack`]);
    a.open();
    expect((await running).published.packs).toEqual([pack]);
    expect((await readdir(path.join(repo.objects, "pack"))).sort()).toEqual([`${pack}.idx`, `${pack}.pack`]);
    await fsckStrict(repo);
  });
});
