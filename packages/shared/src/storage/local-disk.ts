import { randomUUID } from "node:crypto";
import { constants, createWriteStream } from "node:fs";
import { lstat, mkdir, open, realpath, rename, unlink } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { errnoCode, ReclaimError, StorageError } from "../errors";
import { PIPELINE_HIGH_WATER_MARK } from "../stream-buffering";
import { rangePastEnd, validateRange } from "./byte-range";
import { measure, MeteredStream, validateByteLength } from "./metered-stream";
import type { GetOptions, ObjectHead, StorageProvider, StoredObject } from "./provider";
import type { StorageKey } from "./storage-key";
import { mapStreamErrors } from "./stream-errors";

export interface LocalDiskOptions {
  /**
   * Directory that holds every object, as `<baseDir>/companies/<companyId>/...`. Created 0700
   * when missing. Paperclip's default is `<instanceRoot>/data/storage`
   * (`PAPERCLIP_STORAGE_LOCAL_DIR`).
   */
  baseDir: string;
}

/**
 * `local_disk`: one file per object. Writes go to a temporary file beside the target
 * (`.reclaim-tmp-<uuid>`, a name no StorageKey can have), are fsynced, read back and checked,
 * then renamed over the target and the directory fsynced, so a crash leaves either the old
 * object or the new one, never a torn file under the key. A crash can leave a temporary file
 * behind; nothing reads it. Files are 0600, directories 0700: restore points are
 * company data, and the sealed bytes are still nobody else's business.
 */
export function createLocalDiskProvider(options: LocalDiskOptions): StorageProvider {
  const baseDir = path.resolve(options.baseDir);

  async function locate(key: StorageKey, create: boolean): Promise<string> {
    const target = path.join(baseDir, ...key.path.split("/"));
    // StorageKey already refuses `..`; this second check keeps a future key rule change from
    // ever writing outside the base directory.
    if (!target.startsWith(baseDir + path.sep)) {
      throw new StorageError("RECLAIM_ERR_STORAGE_KEY_INVALID", `${key.path} resolves outside ${baseDir}`);
    }
    const dir = path.dirname(target);
    if (create) await mkdir(dir, { recursive: true, mode: 0o700 });
    // A symbolic link planted inside the tree must not redirect writes or reads elsewhere.
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
          const meter = new MeteredStream(byteLength);
          await pipeline(
            body,
            meter,
            createWriteStream(temp, { flags: "wx", mode: 0o600, highWaterMark: PIPELINE_HIGH_WATER_MARK }),
          );
          await fsyncPath(temp, "r+");
          const sent = meter.digest();
          const stored = await measure(await openForRead(temp));
          if (stored.sha256 !== sent.sha256 || stored.byteSize !== sent.byteSize) {
            throw new StorageError("RECLAIM_ERR_STORAGE_VERIFY_FAILED", `${key.path} read back differently`);
          }
          await rename(temp, target);
          await fsyncPath(path.dirname(target), "r");
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
        await fsyncPath(path.dirname(file), "r").catch((error: unknown) => {
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

async function openForRead(file: string): Promise<Readable> {
  const handle = await open(file, "r");
  return handle.createReadStream({ highWaterMark: PIPELINE_HIGH_WATER_MARK });
}

async function fsyncPath(target: string, flags: "r" | "r+"): Promise<void> {
  const handle = await open(target, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
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
