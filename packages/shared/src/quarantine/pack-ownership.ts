/**
 * Ownership of a pack name in the shared object store, held while one capture publishes
 * (or compensates) that pack. This is what makes failure compensation safe.
 *
 * The race it closes (the review of the reference design): captures A and B produce the
 * same pack. A links `pack-X.pack` into the store; B finds it there and counts it as
 * published; A then fails on `pack-X.idx` and removes `pack-X.pack`; B links its index and
 * updates its ref to objects that are gone. With ownership, B cannot touch pack X until A has
 * either published all of its files or removed the ones it created, so B never adopts a
 * half-published pack from a live publisher: it links its own copy, or adopts a complete one.
 *
 * Record: `<objects>/info/reclaim-pack-owners/<pack-name>`, JSON {captureId, pid, host,
 * startedAt}, created atomically (written to a private file, then hard-linked into place,
 * which fails if the record exists). It lives under `info/`, where git looks only for names
 * it knows, so `git count-objects` reports no garbage, and it is removed on release.
 * Holding lasts a few link(2) calls, so contention only arises between captures of identical
 * content. A waiter in the same process awaits the holder directly; across processes it
 * polls. A record whose process is gone (same host, pid not alive) or that is older than
 * `staleAfterMs` is broken: a crash mid-publication cannot block that pack forever.
 */
import { randomUUID } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { errnoCode, QuarantineError } from "../errors";
import type { PublishFs } from "./publish-fs";
import { adjustSharedPerm, type SharedRepository } from "./shared-permissions";
import { sleep, type Clock, type Timer } from "./timing";

export interface OwnershipOptions {
  fs: PublishFs;
  clock: Clock;
  timer: Timer;
  shared: SharedRepository;
  captureId: string;
  /** How long to wait for another live owner of the same pack, ms. */
  busyTimeoutMs: number;
  /** Age after which a record counts as abandoned whatever its pid, ms. */
  staleAfterMs: number;
  /** Test hook: called each time this capture finds the pack owned by someone else. */
  onBusy?: (packName: string) => void;
}

interface OwnerRecord {
  captureId: string;
  pid: number;
  host: string;
  startedAt: number;
}

/** Records held by this process, and how to wait for their release. */
const heldHere = new Map<string, Promise<void>>();
const POLL_MS = 20;

export const OWNERS_DIR = path.join("info", "reclaim-pack-owners");

/** Holds pack `packName` of `objectsDir`; resolves with the release function. */
export async function acquirePackOwnership(
  objectsDir: string,
  packName: string,
  options: OwnershipOptions,
): Promise<() => Promise<void>> {
  const { fs, clock } = options;
  const dir = path.join(objectsDir, OWNERS_DIR);
  const record = path.join(dir, packName);
  const deadline = clock.now() + options.busyTimeoutMs;
  const mine: OwnerRecord = {
    captureId: options.captureId,
    pid: process.pid,
    host: os.hostname(),
    startedAt: clock.now(),
  };
  for (;;) {
    if (await tryCreate(dir, record, mine, options)) {
      let release!: () => void;
      heldHere.set(record, new Promise<void>((resolve) => (release = resolve)));
      return async () => {
        await fs.unlink(record).catch(ignore("ENOENT"));
        heldHere.delete(record);
        release();
        await fs.rmdir(dir).catch(ignore("ENOTEMPTY", "ENOENT", "EEXIST"));
      };
    }
    const holder = await readRecord(fs, record);
    if (holder === "gone") continue;
    const waitHere = heldHere.get(record);
    if (waitHere) {
      options.onBusy?.(packName);
      await waitHere;
      continue;
    }
    if (holder === "unreadable" || isStale(holder.record, options)) {
      await breakStale(fs, record, holder === "unreadable" ? null : holder.ino);
      continue;
    }
    if (clock.now() >= deadline) {
      throw new QuarantineError(
        "RECLAIM_ERR_QUARANTINE_PACK_BUSY",
        `${packName} is being published by capture ${holder.record.captureId} (pid ${holder.record.pid} on ${holder.record.host})`,
      );
    }
    options.onBusy?.(packName);
    await sleep(options.timer, POLL_MS);
  }
}

async function tryCreate(
  dir: string,
  record: string,
  mine: OwnerRecord,
  options: OwnershipOptions,
): Promise<boolean> {
  const { fs } = options;
  const temp = path.join(dir, `.${path.basename(record)}.${randomUUID()}`);
  try {
    await fs.createExclusive(temp, JSON.stringify(mine));
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error;
    for (const needed of [path.dirname(dir), dir]) {
      await fs.mkdir(needed).then(() => adjustSharedPerm(fs, options.shared, needed), ignore("EEXIST"));
    }
    return false;
  }
  try {
    await fs.link(temp, record);
    return true;
  } catch (error) {
    if (errnoCode(error) === "EEXIST" || errnoCode(error) === "ENOENT") return false;
    throw error;
  } finally {
    await fs.unlink(temp).catch(ignore("ENOENT"));
  }
}

async function readRecord(
  fs: PublishFs,
  record: string,
): Promise<"gone" | "unreadable" | { record: OwnerRecord; ino: number }> {
  const info = await fs.lstat(record);
  if (!info) return "gone";
  let text: string;
  try {
    text = await fs.readFile(record);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return "gone";
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as OwnerRecord;
    if (typeof parsed.pid !== "number" || typeof parsed.startedAt !== "number") return "unreadable";
    return { record: parsed, ino: info.ino };
  } catch {
    return "unreadable";
  }
}

function isStale(holder: OwnerRecord, options: OwnershipOptions): boolean {
  const dead = holder.host === os.hostname() && !processAlive(holder.pid);
  return dead || options.clock.now() - holder.startedAt > options.staleAfterMs;
}

/**
 * Moves the record aside, then checks it moved the record it judged: if a live capture
 * re-created the record in between, its record is linked back.
 */
async function breakStale(fs: PublishFs, record: string, judgedIno: number | null): Promise<void> {
  const aside = `${record}.broken-${randomUUID()}`;
  try {
    await fs.rename(record, aside);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return;
    throw error;
  }
  const moved = await fs.lstat(aside);
  if (judgedIno !== null && moved && moved.ino !== judgedIno) {
    await fs.link(aside, record).catch(ignore("EEXIST"));
  }
  await fs.unlink(aside).catch(ignore("ENOENT"));
}

function processAlive(pid: number): boolean {
  if (pid === process.pid) return false; // our own records are all in heldHere
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) === "EPERM";
  }
}

function ignore(...codes: string[]): (error: unknown) => void {
  return (error) => {
    if (!codes.includes(errnoCode(error) ?? "")) throw error;
  };
}
