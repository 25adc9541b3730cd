/**
 * The record format of pack ownership (the contract: pack-ownership.ts) and the entries of
 * `<objects>/info/reclaim-pack-owners/`: a record `<pack>`, a break lock
 * `<pack>.break-<lockId>` and a temporary record `<pack>.new-<lockId>` are all files of this
 * one format, created O_CREAT|O_EXCL and fsynced, read back, removed only while still ours,
 * or marked abandoned in place. Which lockIds this copy of the module holds (`registered`) is
 * kept here too: a record is registered from before it exists until after it is gone.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { errnoCode, ignoreErrno, QuarantineError } from "../errors";
import { currentProcess, type ProcessIdentity } from "./process-identity";
import type { OwnershipOptions } from "./pack-ownership";
import type { PublishFs } from "./publish-fs";
import { adjustSharedPerm, mkdirShared } from "./shared-permissions";

export interface OwnerRecord extends ProcessIdentity {
  lockId: string;
  captureId: string;
  /** The copy of this module that wrote it (one per module instance, random). */
  instance: string;
  /** Milliseconds since the epoch, by the capture's clock. */
  createdAt: number;
  /** Set by its holder when it leaves the record behind (abandon, failed release): dead. */
  abandoned?: true;
}

/** What the name of a record or break lock holds right now. */
export type Held = { kind: "held"; lockId: string; ino: number; mtimeMs: number; record: OwnerRecord | null };
export type Observed = { kind: "gone" } | Held;

export type Taken = { lockId: string; ino: number; brokeDead: boolean };

const OWNERS_DIR = path.join("info", "reclaim-pack-owners");

/**
 * This copy of the module. `registered` speaks only for the records written with this
 * instance id: another copy in the same process (a worker thread, a second bundle) has the
 * same pid and start time but its own registry.
 */
export const INSTANCE = randomUUID();
/** lockIds of the records and break locks this copy of the module holds right now. */
export const registered = new Set<string>();

/** Names in the owners directory (records and break locks); none when it does not exist. */
export async function listOwnerEntries(objectsDir: string, fs: PublishFs): Promise<string[]> {
  return fs.readdir(path.join(objectsDir, OWNERS_DIR)).catch((error: unknown) => {
    if (errnoCode(error) === "ENOENT") return [] as string[];
    throw error;
  });
}

/** The owners directory of one object store: its entries, read, created and removed. */
export class OwnerEntries {
  readonly dir: string;

  constructor(
    private readonly objectsDir: string,
    readonly options: OwnershipOptions,
  ) {
    this.dir = path.join(objectsDir, OWNERS_DIR);
  }

  key(packName: string): string {
    return `${this.objectsDir}\0${packName}`;
  }

  list(): Promise<string[]> {
    return listOwnerEntries(this.objectsDir, this.options.fs);
  }

  async read(name: string): Promise<Observed> {
    const { fs } = this.options;
    const file = path.join(this.dir, name);
    const info = await fs.lstat(file);
    if (!info) return { kind: "gone" };
    let text: string;
    try {
      text = await fs.readFile(file);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return { kind: "gone" };
      throw error;
    }
    const record = parseRecord(text);
    // An unreadable record is named by its inode, so its break lock is still unique to it.
    const lockId = record?.lockId ?? `ino${info.ino}`;
    return { kind: "held", lockId, ino: info.ino, mtimeMs: info.mtimeMs, record };
  }

  async busyError(packName: string): Promise<QuarantineError> {
    const seen = await this.read(packName).catch(() => null);
    const holder =
      seen?.kind === "held" && seen.record
        ? `capture ${seen.record.captureId} (pid ${seen.record.pid} on ${seen.record.host})`
        : "another capture";
    return new QuarantineError(
      "RECLAIM_ERR_QUARANTINE_PACK_BUSY",
      `${packName} is being published by ${holder}`,
    );
  }

  /**
   * Unlinks `name` only if it still is lock `taken`; then this process no longer holds it.
   * If that fails, the lock is left marked abandoned, so that any process may break it.
   */
  async release(name: string, taken: Taken): Promise<void> {
    try {
      const seen = await this.read(name);
      if (seen.kind === "held" && seen.lockId === taken.lockId) {
        await this.options.fs.unlink(path.join(this.dir, name)).catch(ignoreErrno("ENOENT"));
      }
    } catch (error) {
      await this.markAbandoned(name, taken).catch(() => undefined);
      throw error;
    } finally {
      registered.delete(taken.lockId);
    }
  }

  /**
   * Rewrites lock `taken` at `name` in place with `abandoned` set, if it still is that lock's
   * inode (never someone else's record). A reader meanwhile sees the old record, an
   * unreadable one (fresh, so live), or the marked one.
   */
  async markAbandoned(name: string, taken: Taken): Promise<void> {
    const seen = await this.read(name);
    if (seen.kind !== "held" || seen.lockId !== taken.lockId || !seen.record) return;
    const marked: OwnerRecord = { ...seen.record, abandoned: true };
    await this.options.fs.overwriteIfSame(path.join(this.dir, name), taken.ino, JSON.stringify(marked));
  }

  /** Removes our own temporary record `name` (if it still is inode `ino`) and unregisters it. */
  async discard(name: string, lockId: string, ino: number): Promise<void> {
    try {
      await unlinkIfSame(this.options.fs, path.join(this.dir, name), ino);
    } finally {
      registered.delete(lockId);
    }
  }

  /** Creates `name` as lock `lockId`; null when it exists. */
  async create(name: string, lockId: string): Promise<{ ino: number } | null> {
    const { fs, clock, shared, captureId } = this.options;
    const record: OwnerRecord = {
      lockId,
      captureId,
      instance: INSTANCE,
      ...currentProcess(),
      createdAt: clock.now().getTime(),
    };
    const file = path.join(this.dir, name);
    // Registered first: from the instant the file exists, this process counts it as live.
    registered.add(lockId);
    let holding: { ino: number } | null = null;
    try {
      for (let attempt = 0; !holding; attempt += 1) {
        try {
          holding = await fs.createExclusive(file, JSON.stringify(record));
        } catch (error) {
          if (errnoCode(error) === "EEXIST") return null;
          // The directory is created on first use and removed when empty, possibly just now.
          if (errnoCode(error) !== "ENOENT" || attempt === 3) throw error;
          await this.ensureDirectory();
        }
      }
      try {
        // Others must be able to read the record in a shared repository.
        await adjustSharedPerm(fs, shared, file);
        await fs.syncDir(this.dir);
      } catch (error) {
        // Registered, so nobody here broke it; still, only while it is our inode.
        await unlinkIfSame(fs, file, holding.ino).catch(() => undefined);
        holding = null;
        throw error;
      }
      return holding;
    } finally {
      if (!holding) registered.delete(lockId);
    }
  }

  private async ensureDirectory(): Promise<void> {
    const { fs, shared } = this.options;
    for (const needed of [path.dirname(this.dir), this.dir]) {
      // The new directory's own entry, durable too.
      if (await mkdirShared(fs, shared, needed)) await fs.syncDir(path.dirname(needed));
    }
  }
}

function parseRecord(text: string): OwnerRecord | null {
  try {
    const parsed = JSON.parse(text) as Partial<OwnerRecord>;
    if (
      typeof parsed.lockId !== "string" ||
      typeof parsed.pid !== "number" ||
      typeof parsed.createdAt !== "number"
    ) {
      return null;
    }
    return {
      lockId: parsed.lockId,
      captureId: String(parsed.captureId ?? ""),
      instance: String(parsed.instance ?? ""),
      host: String(parsed.host ?? ""),
      bootId: String(parsed.bootId ?? ""),
      pidNs: String(parsed.pidNs ?? ""),
      pid: parsed.pid,
      pidStart: String(parsed.pidStart ?? ""),
      createdAt: parsed.createdAt,
      ...(parsed.abandoned === true ? { abandoned: true as const } : {}),
    };
  } catch {
    return null;
  }
}

/** `pack-<hash>` of a record name or a break lock name (`pack-<hash>.break-<lockId>`). */
export function packOf(name: string): string {
  const dot = name.indexOf(".");
  return dot === -1 ? name : name.slice(0, dot);
}

/**
 * Unlinks `file` if it still is inode `ino` (ENOENT ignored). Between the check and the
 * unlink the name could still change hands; the check only narrows that to microseconds.
 */
async function unlinkIfSame(fs: PublishFs, file: string, ino: number): Promise<void> {
  if ((await fs.lstat(file))?.ino !== ino) return;
  await fs.unlink(file).catch(ignoreErrno("ENOENT"));
}
