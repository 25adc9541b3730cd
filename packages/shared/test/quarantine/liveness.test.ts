/**
 * Which ownership records are dead (process-identity.ts, pack-ownership.ts): a record is
 * judged by the kernel (boot id) and PID namespace its process ran in, never by hostname.
 * Crafted records for each rule, and real second processes in another PID namespace and
 * under another hostname (`unshare`; they fail, never skip, where it cannot run).
 */
import path from "node:path";
import { realPublishFs, type PublishFs } from "../../src";
import { bootStartMs, currentProcess } from "../../src/quarantine/process-identity";
import { capture } from "./capture";
import { cleanup, errnoError, fsckStrict, repoWithLargeFile } from "./git-fixture";
import {
  expectBroken,
  expectBusy,
  pidOfExitedProcess,
  requireUnshare,
  smallCapture,
  waitingClock,
} from "./ownership-fixture";
import { liveIdentity, ownerEntries, readRecord } from "./owners";
import { startPublisher, stopPublishers } from "./publisher";
import { rejectionOf } from "../rejection";

afterEach(async () => {
  stopPublishers();
  await cleanup();
});

const STALE_MS = 1_000;

describe("the kernel and PID namespace of a record's process", () => {
  // By the process: breaking must not depend on age, so the default 10 min staleness.
  it.each([
    [
      "an exited process of this kernel and PID namespace, whatever its hostname",
      async () => ({ pid: await pidOfExitedProcess(), host: "another-container" }),
    ],
    [
      "an earlier boot of this machine (created before this kernel booted), though its pid runs now",
      async () => ({
        ...(await liveIdentity(process.ppid)),
        bootId: "an-earlier-boot",
        createdAt: bootStartMs() - 1,
      }),
    ],
  ])("breaks a record of %s", async (_case, holder) => {
    await expectBroken(61, await holder());
  });

  it.each([
    [
      "another PID namespace of this kernel",
      async () => ({
        pid: await pidOfExitedProcess(),
        pidNs: "pid:[1]",
        createdAt: Date.now() - 2 * STALE_MS,
      }),
    ],
    [
      "another machine",
      async () => ({
        pid: 1,
        bootId: "another-machine",
        host: "elsewhere",
        createdAt: Date.now() - 2 * STALE_MS,
      }),
    ],
  ])("breaks a record of %s once older than packOwnerStaleAfterMs", async (_case, holder) => {
    await expectBroken(61, await holder(), { packOwnerStaleAfterMs: STALE_MS });
  });

  it.each([
    [
      "a live process of this kernel and PID namespace under another hostname",
      async () => ({ ...(await liveIdentity(process.ppid)), host: "another-container" }),
    ],
    [
      "another PID namespace of this kernel while recent, though it has this hostname and its pid runs nothing here",
      async () => ({ pid: await pidOfExitedProcess(), pidNs: "pid:[1]" }),
    ],
    [
      "another machine while recent, even of the same hostname",
      async () => ({ pid: await pidOfExitedProcess(), bootId: "another-machine" }),
    ],
    [
      "an earlier version (no PID namespace in the record) while recent",
      async () => ({ pid: await pidOfExitedProcess(), pidNs: "" }),
    ],
  ])("waits for %s", async (_case, holder) => {
    await expectBusy(62, await holder());
  });
});

describe("a /proc that refuses other processes' stat (hidepid)", () => {
  /** The real filesystem, except that reading /proc/<pid>/stat of `pid` fails with `code`. */
  const refusing = (pid: number, code: string): PublishFs => ({
    ...realPublishFs,
    readFile: async (target) => {
      if (target === `/proc/${pid}/stat`) throw errnoError(code, "open", target);
      return realPublishFs.readFile(target);
    },
  });

  it.each(["EACCES", "EPERM"])("judges a live holder by kill(pid, 0): waits for it (%s)", async (code) => {
    await expectBusy(65, await liveIdentity(process.ppid), {
      testHooks: { fs: refusing(process.ppid, code) },
    });
  });

  it.each(["EACCES", "EPERM"])(
    "judges an exited holder by kill(pid, 0): breaks its record (%s)",
    async (code) => {
      const pid = await pidOfExitedProcess();
      await expectBroken(65, { pid }, { testHooks: { fs: refusing(pid, code) } });
    },
  );
});

// A second process in its own PID namespace (pid 2 there; `sh` is its pid 1) and /proc.
// --kill-child: killing unshare (stopPublishers) ends the namespace and all in it.
const OTHER_PID_NAMESPACE = [
  "unshare",
  "--pid",
  "--kill-child",
  "--mount-proc",
  "sh",
  "-c",
  '"$@"; exit $?',
  "sh",
];
// A second process in this PID namespace under another hostname.
const OTHER_HOSTNAME = [
  "unshare",
  "--uts",
  "sh",
  "-c",
  'echo reclaim-other-host > /proc/sys/kernel/hostname && exec "$@"',
  "sh",
];

describe("real second processes (unshare)", () => {
  beforeAll(requireUnshare);

  it("never breaks the record of a live capture in another PID namespace of the same hostname: waits", async () => {
    const repo = await repoWithLargeFile(63);
    const other = startPublisher(
      repo,
      { ref: "refs/reclaim/other", at: "idx", action: "await-line" },
      OTHER_PID_NAMESPACE,
    );
    const pack = path.basename((await other.line("at ")).slice("at ".length), ".idx");
    const theirs = await readRecord(repo, pack);
    const me = currentProcess();
    expect([theirs.host, theirs.bootId]).toEqual([me.host, me.bootId]);
    expect(theirs.pidNs).not.toBe(me.pidNs);
    const { clock, timer } = waitingClock();
    const error = await rejectionOf(capture(repo, { clock, timer, packBusyTimeoutMs: 1_000 }));
    expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PACK_BUSY");
    expect((await readRecord(repo, pack)).lockId).toBe(theirs.lockId);
    other.send("go");
    expect(await other.exited).toBe(0);
    const commit = (await other.line("commit ")).slice("commit ".length);
    expect((await repo.git(["rev-parse", "refs/reclaim/other"])).trim()).toBe(commit);
    expect(await ownerEntries(repo)).toBeNull();
    await fsckStrict(repo);
  });

  it("recovers at once the pack of a capture killed in this PID namespace under another hostname (pid: host)", async () => {
    const repo = await repoWithLargeFile(64);
    const killed = startPublisher(repo, { at: "idx", action: "kill" }, OTHER_HOSTNAME);
    const pack = path.basename((await killed.line("at ")).slice("at ".length), ".idx");
    expect(await killed.exited).toBe("SIGKILL");
    const record = await readRecord(repo, pack);
    expect([record.host, record.pid]).toEqual(["reclaim-other-host", killed.pid]);
    const { published } = await smallCapture(repo, "anything\n");
    expect(published.recoveredPacks).toEqual([pack]);
    expect(await ownerEntries(repo)).toBeNull();
    await fsckStrict(repo);
  });
});
