/** What the ownership and liveness tests share: pack names, waiting clocks, gated filesystems. */
import { execFile, spawnSync } from "node:child_process";
import path from "node:path";
import { realPublishFs, withObjectQuarantine, type Clock, type PublishFs, type Timer } from "../../src";
import type { OwnerRecord } from "../../src/quarantine/pack-ownership";
import { rejectionOf } from "../rejection";
import { capture, type CaptureOptions } from "./capture";
import { fsckStrict, gitEnv, packsIn, repoWithLargeFile, type Repo } from "./git-fixture";
import { ownerEntries, plantRecord, readRecord } from "./owners";

/** The name of the pack a capture of `seed`'s large file produces (from a throwaway repo). */
export async function packNameFor(seed: number): Promise<string> {
  return (await capture(await repoWithLargeFile(seed))).published.packs[0]!;
}

/** A clock that advances only when the capture waits: each wait moves it by its delay. */
export function waitingClock(): { clock: Clock; timer: Timer } {
  let now = Date.now();
  return {
    clock: { now: () => new Date(now) },
    timer: {
      setTimeout: (callback, ms) => {
        now += ms;
        setImmediate(callback);
        return 0;
      },
      clearTimeout: () => undefined,
    },
  };
}

export type GatedCall = "link" | "createExclusive" | "unlink" | "rename";

/**
 * A publication fs that stops at the first call of `when` for which it returns true, until
 * the test opens the gate; `stopped` resolves when it has stopped there. `createExclusive`
 * stops after the file exists; the other calls stop before they act (an `open(fault)`
 * makes them fail with `fault` instead).
 */
export function gatedFs(
  when: (call: GatedCall, target: string) => boolean,
  base: PublishFs = realPublishFs,
): { fs: PublishFs; stopped: Promise<string>; open: (fault?: Error) => void } {
  let stop!: (target: string) => void;
  const stopped = new Promise<string>((resolve) => (stop = resolve));
  let open!: (fault?: Error) => void;
  const gate = new Promise<Error | undefined>((resolve) => (open = resolve));
  let done = false;
  const pause = async (call: GatedCall, target: string): Promise<void> => {
    if (done || !when(call, target)) return;
    done = true;
    stop(target);
    const fault = await gate;
    if (fault) throw fault;
  };
  return {
    fs: {
      ...base,
      link: async (from, to) => {
        await pause("link", to);
        return base.link(from, to);
      },
      rename: async (from, to) => {
        await pause("rename", to);
        return base.rename(from, to);
      },
      unlink: async (target) => {
        await pause("unlink", target);
        return base.unlink(target);
      },
      createExclusive: async (target, content) => {
        const created = await base.createExclusive(target, content);
        await pause("createExclusive", target);
        return created;
      },
    },
    stopped,
    open,
  };
}

export const isOwnersEntry = (target: string): boolean =>
  path.basename(path.dirname(target)) === "reclaim-pack-owners";

export const isRecord = (target: string): boolean =>
  isOwnersEntry(target) && !path.basename(target).includes(".");

export async function pidOfExitedProcess(): Promise<number> {
  const child = execFile("true");
  const pid = child.pid!;
  await new Promise((resolve) => child.on("exit", resolve));
  return pid;
}

/** A capture that writes one small loose object and no pack. */
export function smallCapture(repo: Repo, content: string, fs?: PublishFs) {
  return withObjectQuarantine(
    repo.dir,
    "small",
    (ctx) => ctx.git(["hash-object", "-w", "--stdin"], { input: content }),
    { env: gitEnv, testHooks: { fs } },
  );
}

/**
 * The tests that need a real second PID or UTS namespace start one with `unshare` (util-linux,
 * as root). Where it cannot, they fail saying so: skipped, they would pass without checking.
 */
export function requireUnshare(): void {
  const probe = spawnSync("unshare", ["--pid", "--fork", "--mount-proc", "--uts", "true"], {
    encoding: "utf8",
  });
  if (probe.status !== 0)
    throw new Error(
      `these tests need \`unshare --pid --uts\` (util-linux, run as root): ${probe.error?.message ?? probe.stderr.trim()}`,
    );
}

type Holder = Partial<OwnerRecord> & { pid: number };

/** A capture of seed `seed`'s pack breaks the record of `holder` planted on that pack and publishes it. */
export async function expectBroken(
  seed: number,
  holder: Holder,
  options: CaptureOptions = {},
): Promise<void> {
  const pack = await packNameFor(seed);
  const repo = await repoWithLargeFile(seed);
  await plantRecord(repo, pack, holder);
  const { published } = await capture(repo, options);
  expect(published.packs).toEqual([pack]);
  expect(await ownerEntries(repo)).toBeNull();
  await fsckStrict(repo);
}

/**
 * A capture of seed `seed`'s pack waits for the record of `holder` planted on that pack, then
 * gives up with a retryable busy error, the record untouched and nothing of the pack published.
 */
export async function expectBusy(seed: number, holder: Holder, options: CaptureOptions = {}): Promise<void> {
  const pack = await packNameFor(seed);
  const repo = await repoWithLargeFile(seed);
  const planted = await plantRecord(repo, pack, holder);
  const { clock, timer } = waitingClock();
  let waits = 0;
  const error = await rejectionOf(
    capture(repo, {
      ...options,
      clock,
      timer,
      packBusyTimeoutMs: 1_000,
      testHooks: { ...options.testHooks, onPackBusy: () => waits++ },
    }),
  );
  expect(error.code).toBe("RECLAIM_ERR_QUARANTINE_PACK_BUSY");
  expect(error.permanent).toBe(false);
  expect(waits).toBeGreaterThan(10);
  expect(await packsIn(repo.objects)).toEqual([]);
  expect((await readRecord(repo, pack)).lockId).toBe(planted.lockId);
  await fsckStrict(repo);
}
