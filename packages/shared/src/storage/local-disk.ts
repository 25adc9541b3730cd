import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, realpath, rename, unlink } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { dirsBelow, fsyncDir, mkdirDurable, type FsyncObserver } from "../durable-dirs";
import { errnoCode, ReclaimError, StorageError } from "../errors";
import { PIPELINE_HIGH_WATER_MARK } from "../stream-buffering";
import { rangePastEnd, validateRange } from "./byte-range";
import { validateByteLength } from "./metered-stream";
import type { GetOptions, ObjectHead, StorageProvider, StoredObject } from "./provider";
import type { StorageKey } from "./storage-key";
import { mapStreamErrors } from "./stream-errors";
import { writeVerified } from "./verified-write";

export interface LocalDiskOptions {
  /**
   * Directory that holds every object, as `<baseDir>/companies/<companyId>/...`. Created 0700
   * when missing. Paperclip's default is `<instanceRoot>/data/storage`
   * (`PAPERCLIP_STORAGE_LOCAL_DIR`).
   */
  baseDir: string;
  /**
   * Test hooks, never set in production: `onFsync` sees every file and directory fsynced;
   * `beforeReadBack` runs after a region of the temporary file is durable and before it is
   * read back (a test changes stored bytes there).
   */
  testHooks?: {
    onFsync?: FsyncObserver;
    beforeReadBack?: (tempFile: string, offset: number, length: number) => Promise<void> | void;
  };
}

/**
 * `local_disk`: one file per object. Writes go to a temporary file beside the target
 * (`.reclaim-tmp-<uuid>`, a name no StorageKey can have), are fsynced, read back and compared
 * with what was sent (verified-write.ts), then renamed over the target and the directory
 * fsynced, so a crash leaves either the old object or the new one, never a torn file under
 * the key. Directories created on the way are fsynced into their parents too. A crash can
 * leave a temporary file behind; nothing reads it. Files are 0600, directories 0700: restore
 * points are company data, and the sealed bytes are still nobody else's business.
 */
export function createLocalDiskProvider(options: LocalDiskOptions): StorageProvider {
  const baseDir = path.resolve(options.baseDir);
  const hooks = options.testHooks ?? {};

  async function locate(key: StorageKey, create: boolean): Promise<string> {
    const target = path.join(baseDir, ...key.path.split("/"));
    // StorageKey already refuses `..`; this second check keeps a future key rule change from
    // ever writing outside the base directory.
    if (!target.startsWith(baseDir + path.sep)) {
      throw new StorageError("RECLAIM_ERR_STORAGE_KEY_INVALID", `${key.path} resolves outside ${baseDir}`);
    }
    const dir = path.dirname(target);
    // Checked before anything is created: a symbolic link planted at any level below the base
    // must not redirect writes or reads elsewhere, nor get a directory made beyond it.
    if (create) await mkdirDurable(baseDir, 0o700, hooks.onFsync);
    const below = await dirsBelow(baseDir, dir, { create, mode: 0o700, observe: hooks.onFsync });
    if (below.status === "symlink" || (create && below.status === "not_a_directory")) {
      throw new StorageError(
        "RECLAIM_ERR_STORAGE_KEY_INVALID",
        `${key.path} leads through ${below.status === "symlink" ? "a link" : "a non-directory"} at ${path.relative(baseDir, below.at)}`,
      );
    }
    // Belt and braces against a swap during the walk: the directory must still resolve inside.
    const realDir = await realpath(dir).catch((error: unknown) => {
      if (errnoCode(error) === "ENOENT") return dir;
      throw error;
    });
    const realBase = await realpath(baseDir).catch(() => baseDir);
    if (!(realDir + path.sep).startsWith(realBase + path.sep)) {
      throw new StorageError(
        "RECLAIM_ERR_STORAGE_KEY_INVALID",
        `${key.path} leads through a link outside ${baseDir}`,
      );
    }
    return target;
  }

  return {
    kind: "local_disk",

    async put(key, body, byteLength): Promise<StoredObject> {
      validateByteLength(byteLength);
      return withIoErrors(`put ${key.path}`, async () => {
        const target = await locate(key, true);
        const temp = path.join(path.dirname(target), `.reclaim-tmp-${randomUUID()}`);
        try {
          const handle = await open(temp, constants.O_CREAT | constants.O_EXCL | constants.O_RDWR, 0o600);
          let stored: { sha256: string; byteSize: number };
          try {
            stored = await writeVerified(body, handle, byteLength, {
              onFsync: () => hooks.onFsync?.(temp),
              beforeReadBack: (offset, length) => hooks.beforeReadBack?.(temp, offset, length),
            });
          } finally {
            await handle.close();
          }
          await rename(temp, target);
          await fsyncDir(path.dirname(target), hooks.onFsync);
          return { key, ...stored };
        } catch (error) {
          await unlink(temp).catch(() => undefined);
          body.destroy();
          throw error;
        }
      });
    },

    async get(key, options: GetOptions = {}): Promise<Readable> {
      if (options.range) validateRange(options.range);
      return withIoErrors(`get ${key.path}`, async () => {
        const file = await locate(key, false);
        const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW).catch((error: unknown) => {
          throw errnoCode(error) === "ENOENT" || errnoCode(error) === "ELOOP"
            ? new StorageError("RECLAIM_ERR_STORAGE_NOT_FOUND", key.path, { cause: error })
            : error;
        });
        try {
          const { size } = await handle.stat();
          const range = options.range;
          if (range && range.offset >= size) throw rangePastEnd(range, size);
          const stream = range
            ? handle.createReadStream({
                highWaterMark: PIPELINE_HIGH_WATER_MARK,
                start: range.offset,
                end: Math.min(size, range.offset + range.length) - 1,
              })
            : handle.createReadStream({ highWaterMark: PIPELINE_HIGH_WATER_MARK });
          return mapStreamErrors(stream, (error) => ioError(`get ${key.path}`, error));
        } catch (error) {
          await handle.close();
          throw error;
        }
      });
    },

    async head(key): Promise<ObjectHead | null> {
      return withIoErrors(`head ${key.path}`, async () => {
        const file = await locate(key, false);
        const info = await lstat(file).catch((error: unknown) => {
          if (errnoCode(error) === "ENOENT") return null;
          throw error;
        });
        return info && info.isFile() ? { byteSize: info.size } : null;
      });
    },

    async delete(key): Promise<void> {
      return withIoErrors(`delete ${key.path}`, async () => {
        const file = await locate(key, false);
        await unlink(file).catch((error: unknown) => {
          if (errnoCode(error) !== "ENOENT") throw error;
        });
        await fsyncDir(path.dirname(file), hooks.onFsync).catch((error: unknown) => {
          if (errnoCode(error) !== "ENOENT") throw error;
        });
        const still = await lstat(file).then(
          () => true,
          (error: unknown) => {
            if (errnoCode(error) === "ENOENT") return false;
            throw error;
          },
        );
        if (still) throw new StorageError("RECLAIM_ERR_STORAGE_DELETE_UNCONFIRMED", key.path);
      });
    },
  };
}

async function withIoErrors<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw ioError(what, error);
  }
}

function ioError(what: string, error: unknown): Error {
  if (error instanceof ReclaimError) return error;
  return new StorageError("RECLAIM_ERR_STORAGE_IO", `${what}: ${errnoCode(error) ?? String(error)}`, {
    cause: error,
  });
}
