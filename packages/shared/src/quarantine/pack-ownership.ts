/**
 * Ownership of a pack name in the shared object store, held while one capture publishes,
 * compensates or recovers that pack. This is what makes failure compensation safe.
 *
 * The race it closes (the review of the reference design): captures A and B produce the
 * same pack. A links `pack-X.pack` into the store; B finds it there and counts it as
 * published; A then fails on `pack-X.idx` and removes `pack-X.pack`; B links its index and
 * updates its ref to objects that are gone. With ownership, B cannot touch pack X until A has
 * either published all of its files or removed the ones it created, so B never adopts a
 * half-published pack from a live publisher: it links its own copy, or adopts a complete one.
 *
 * Protocol (every name below is in `<objects>/info/reclaim-pack-owners/`, a directory git
 * never reads, created with core.sharedRepository permissions):
 *
 *  - Record: the file `<pack>`, JSON {lockId (fresh per record), captureId, instance (of
 *    this module), bootId, pidNs, pid, pidStart, host (information only), createdAt}
 *    (process-identity.ts).
 *  - Take: register lockId in this process, then create the record with O_CREAT|O_EXCL,
 *    write, fsync it and its directory (so a record that a power loss would lose never
 *    guards a `.pack` that survived). EEXIST means somebody holds it. No hard link is
 *    needed, so this works where the filesystem refuses them.
 *  - Holder dead? Judged from the record, first rule that applies (process-identity.ts):
 *     - marked `abandoned` by its holder (below): dead;
 *     - unreadable (a crash between create and write): dead once its mtime is
 *       `staleAfterMs` old;
 *     - this very process, this copy of the module: live exactly while its lockId is
 *       registered here (registered before the create, unregistered after the unlink, so a
 *       record being created here is never taken for dead, and one a failed release left
 *       behind is);
 *     - this process, another copy of the module (a worker thread, a second bundle: same
 *       pid and start time, another `instance`): live while this process runs;
 *     - the same kernel (boot id) and PID namespace: live while the pid runs with the same
 *       start time (a reused pid has another), whatever the hostname (docker-compose
 *       workers with `pid: host` have their own); where /proc/<pid>/stat cannot be read
 *       (hidepid: ENOENT, EACCES, EPERM), kill(pid, 0) alone decides;
 *     - the same kernel, another PID namespace (a container next to this one, even of the
 *       same hostname, whose pids mean other processes here): dead once `createdAt` is
 *       `staleAfterMs` old;
 *     - another boot id: dead if `createdAt` is before this kernel booted (btime: an earlier
 *       boot of this machine), otherwise (another machine on a network store) by age too.
 *       A record without a PID namespace (an earlier version) is judged by age.
 *  - Break a dead holder's record R (lockId r): take the break lock `<pack>.break-<r>`
 *    exactly as a record is taken, so only one capture anywhere breaks R (a dead breaker's
 *    break lock is broken the same way, under `<pack>.break-<its lockId>`); under it, write
 *    this capture's record under a temporary name `<pack>.new-<lockId>`, re-read R and, if
 *    it still has lockId r and its inode and is still dead (an unreadable record's inode may
 *    have been reused by a fresh one), rename the temporary record over R; drop the break
 *    lock. The breaker now holds the pack and knows it was abandoned (`tookOverAbandoned`):
 *    the name was never free, so no other capture can take the pack in between without
 *    learning that. A record is never moved aside or put back, so a live record can neither
 *    be lost nor resurrected after its release: it is replaced only by the one holder of
 *    its break lock after that holder saw it dead, and a dead holder stays dead. The rename
 *    needs no fsync: a power loss that undoes it brings back the dead record, which guards
 *    the same pack.
 *  - Release: re-read the record and unlink it only if its lockId is still ours (the name
 *    can be someone else's after another host broke ours by age), then unregister. If the
 *    unlink fails, the record is marked abandoned (below) instead.
 *  - Wait: captures of this process queue on one promise per pack; across processes the
 *    record is polled every 20 ms; both together are bounded by `busyTimeoutMs` and end in
 *    retryable RECLAIM_ERR_QUARANTINE_PACK_BUSY.
 *  - Recovery: a broken record means its capture died mid-publication or mid-compensation.
 *    The capture that breaks it learns this (`tookOverAbandoned`) and, holding the pack,
 *    removes whatever of the pack is in the store without its `.idx` (pack-recovery.ts). If
 *    that removal fails, the new record is left in place (`abandon()`) so recovery is tried
 *    again; at the start of a publication this is best effort per pack (a failure is
 *    reported, not fatal).
 *  - Abandon (and a failed release, of a record or a break lock): the holder rewrites its
 *    record in place with `abandoned: true`, only while the name is still its own inode;
 *    such a record is dead to every process at once. If even that write fails, the record
 *    is dead to this process at once and to others when this process ends.
 *
 * Holding lasts a few link(2) calls, so contention only arises between captures of identical
 * content. Limits:
 *  - Time. Judging by age trusts clocks this module does not control: `createdAt` is the
 *    writer's clock and is compared with this one's (`clock`), an unreadable record's mtime
 *    is whatever the filesystem stamped (on NFS usually the server's clock), and btime is
 *    this machine's. A writer whose clock runs behind this one's by S makes its records
 *    look S older (broken S early; with S > `staleAfterMs`, at once); one running ahead makes
 *    dead records wait S longer; a record another machine wrote in the first S after this
 *    one booted counts as of an earlier boot. Keep the clocks of hosts sharing a store
 *    synchronized (NTP) and `staleAfterMs` well above their skew.
 *  - A live holder judged by age (another PID namespace or machine) that keeps a pack past
 *    `staleAfterMs`, because it froze, loses its record; so does one on another machine
 *    that has held it since before this machine booted (the btime rule). It then neither
 *    publishes the pack's index, compensates nor releases (see `held()`), but what it does
 *    in the instant between that check and the act is not protected, and its release's
 *    check-then-unlink could in that instant remove the new holder's record.
 *  - Removing a file "only if it is still ours" (by lockId, or by inode on error paths) is a
 *    check followed by an unlink: it narrows a name changing hands in between to
 *    microseconds, it does not exclude it (inodes are reused at once on common filesystems).
 *  - A plain `git` (not Reclaim) finalizing a byte-identical pack in the same milliseconds
 *    takes no record at all (publish.ts).
 *
 * Files: pack-owner-record.ts (the record format and the owners directory's entries),
 * pack-owner-liveness.ts (whether a holder is dead), pack-owner-breaking.ts (take, break a
 * dead holder's record, remove a dead breaker's leftovers); this file holds the contract,
 * the in-process queue and the ownership handle.
 */
import { ignoreErrno, QuarantineError } from "../errors";
import type { Clock } from "../clock";
import { tryTake } from "./pack-owner-breaking";
import { OwnerEntries, registered, type Taken } from "./pack-owner-record";
import type { PublishFs } from "./publish-fs";
import type { SharedRepository } from "./shared-permissions";
import { sleep, type Timer } from "./timing";

export { removeDeadLeftovers } from "./pack-owner-breaking";
export { INSTANCE, listOwnerEntries, packOf, type OwnerRecord } from "./pack-owner-record";

export interface OwnershipOptions {
  fs: PublishFs;
  clock: Clock;
  timer: Timer;
  shared: SharedRepository;
  captureId: string;
  /** How long to wait for another live owner of the same pack, ms. */
  busyTimeoutMs: number;
  /**
   * Age after which a record whose process cannot be checked from here (another PID
   * namespace, another machine, an unreadable record) counts as abandoned, ms.
   */
  staleAfterMs: number;
  /** Test hook: called each time this capture finds the pack owned by someone else. */
  onBusy?: (packName: string) => void;
}

export interface PackOwnership {
  /** The record of a capture that died holding this pack was broken to take this one. */
  readonly tookOverAbandoned: boolean;
  /** Whether the pack's record is still this one (false after another host broke it by age). */
  held(): Promise<boolean>;
  /** Removes the record if it is still this one. */
  release(): Promise<void>;
  /**
   * Leaves the record in place, marked abandoned (and unregistered): dead to every process
   * at once, so the next publication anywhere recovers the pack again. If the mark cannot
   * be written, the record is dead to this process now and to others when it ends.
   */
  abandon(): Promise<void>;
}

const POLL_MS = 20;

/** One promise per pack this process is working on: in-process captures queue on it. */
const inProcess = new Map<string, Promise<void>>();

/** Takes pack `packName` of `objectsDir`, waiting up to `busyTimeoutMs` for a live holder. */
export async function acquirePackOwnership(
  objectsDir: string,
  packName: string,
  options: OwnershipOptions,
): Promise<PackOwnership> {
  const deadline = options.clock.now().getTime() + options.busyTimeoutMs;
  const owners = new OwnerEntries(objectsDir, options);
  const local = await queueInProcess(owners.key(packName), packName, deadline, options);
  try {
    for (;;) {
      const taken = await tryTake(owners, packName);
      if (taken !== "busy") return handle(owners, packName, taken, local);
      if (options.clock.now().getTime() >= deadline) throw await owners.busyError(packName);
      options.onBusy?.(packName);
      await sleep(options.timer, POLL_MS);
    }
  } catch (error) {
    local();
    throw error;
  }
}

/** Takes pack `packName` only if nobody live holds it; null otherwise. Never waits. */
export async function tryAcquirePackOwnership(
  objectsDir: string,
  packName: string,
  options: OwnershipOptions,
): Promise<PackOwnership | null> {
  const owners = new OwnerEntries(objectsDir, options);
  const local = await queueInProcess(owners.key(packName), packName, null, options);
  if (!local) return null;
  try {
    const taken = await tryTake(owners, packName);
    if (taken !== "busy") return handle(owners, packName, taken, local);
  } catch (error) {
    local();
    throw error;
  }
  local();
  return null;
}

/**
 * In-process queue: resolves with the function that lets the next capture in, or null when
 * `deadline` is null and another capture of this process holds the pack.
 */
async function queueInProcess(
  key: string,
  packName: string,
  deadline: number,
  options: OwnershipOptions,
): Promise<() => void>;
async function queueInProcess(
  key: string,
  packName: string,
  deadline: number | null,
  options: OwnershipOptions,
): Promise<(() => void) | null>;
async function queueInProcess(
  key: string,
  packName: string,
  deadline: number | null,
  options: OwnershipOptions,
): Promise<(() => void) | null> {
  for (;;) {
    const holder = inProcess.get(key);
    if (!holder) {
      let letNextIn!: () => void;
      inProcess.set(key, new Promise<void>((resolve) => (letNextIn = resolve)));
      return () => {
        inProcess.delete(key);
        letNextIn();
      };
    }
    if (deadline === null) return null;
    const remaining = deadline - options.clock.now().getTime();
    if (remaining <= 0) {
      throw new QuarantineError(
        "RECLAIM_ERR_QUARANTINE_PACK_BUSY",
        `${packName} is being published by another capture of this process`,
      );
    }
    options.onBusy?.(packName);
    await released(holder, remaining, options.timer);
  }
}

/** Resolves when `holder` resolves or `ms` have passed, whichever is first. */
function released(holder: Promise<void>, ms: number, timer: Timer): Promise<void> {
  return new Promise<void>((resolve) => {
    const timeout = timer.setTimeout(resolve, ms);
    void holder.then(() => {
      timer.clearTimeout(timeout);
      resolve();
    });
  });
}

/** The handle a capture holds the pack by: `held`, `release` (once), `abandon`. */
function handle(owners: OwnerEntries, packName: string, taken: Taken, letNextIn: () => void): PackOwnership {
  let done = false;
  const finish = (): void => {
    done = true;
    letNextIn();
  };
  return {
    tookOverAbandoned: taken.brokeDead,
    held: async () => {
      const seen = await owners.read(packName);
      return seen.kind === "held" && seen.lockId === taken.lockId;
    },
    release: async () => {
      if (done) return;
      try {
        await owners.release(packName, taken);
        await owners.options.fs.rmdir(owners.dir).catch(ignoreErrno("ENOTEMPTY", "ENOENT", "EEXIST"));
      } finally {
        finish();
      }
    },
    abandon: async () => {
      if (done) return;
      registered.delete(taken.lockId); // the record itself stays in place
      try {
        await owners.markAbandoned(packName, taken).catch(() => undefined);
      } finally {
        finish();
      }
    },
  };
}
