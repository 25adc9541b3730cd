import type { FileHandle } from "node:fs/promises";
import { Writable, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { StorageError } from "../errors";
import { PIPELINE_HIGH_WATER_MARK } from "../stream-buffering";
import { lengthMismatch } from "./metered-stream";
import { createSha256 } from "./sha256-off-thread";

/**
 * Writes a stream of known length into an open file and verifies it, in one pass over the
 * bytes, with the disk's flushing overlapped with the producer (sealing) instead of after it:
 *
 *  - chunks are gathered into batches of `WRITE_BATCH` bytes and written with one writev(2)
 *    at an explicit position;
 *  - every `REGION` bytes, the file's data is fdatasynced and that region is then read back
 *    through the file, compared byte for byte with the chunks that were sent (kept until
 *    then), and fed to SHA-256 (on a worker thread for large payloads: sha256-off-thread.ts),
 *    while the next region is already being produced and written;
 *  - the last region is read back after a full fsync of the file.
 *
 * So every byte is durable, then read back and equal to what was sent, before the result is
 * reported, and the SHA-256 is of the bytes as read back, as the ledger needs. Compared with
 * "write all, fsync, read back all and hash, having hashed what was sent", this hashes once
 * instead of twice, and the fsync no longer waits for gigabytes dirtied in one go.
 *
 * Memory: the chunks of at most two regions (the one being verified and the one being
 * written) and the hash's read buffers: about 2 * (REGION + WRITE_BATCH) + 3 * READ_PIECE.
 * The chunks
 * must not be modified by their producer after being handed over (Node streams never do);
 * if one were, the comparison would fail (RECLAIM_ERR_STORAGE_VERIFY_FAILED), never pass
 * silently.
 */
const WRITE_BATCH = 2 * 1024 * 1024;
const REGION = 8 * 1024 * 1024;
const READ_PIECE = 2 * 1024 * 1024;

export interface VerifiedWriteHooks {
  /** Called after each fsync/fdatasync of the file. */
  onFsync?: () => void;
  /** Called before a region is read back (a test changes stored bytes here). */
  beforeReadBack?: (offset: number, length: number) => Promise<void> | void;
}

export async function writeVerified(
  body: Readable,
  handle: FileHandle,
  byteLength: number,
  hooks: VerifiedWriteHooks = {},
): Promise<{ sha256: string; byteSize: number }> {
  const hash = createSha256(byteLength, Math.min(READ_PIECE, Math.max(1, byteLength)));
  let written = 0; // bytes written to the file
  let batch: Buffer[] = [];
  let batchBytes = 0;
  let region: Buffer[] = []; // chunks written since the region started, kept for comparison
  let regionStart = 0;
  let verifying: Promise<void> = Promise.resolve();

  const sync = async (full: boolean): Promise<void> => {
    await (full ? handle.sync() : handle.datasync());
    hooks.onFsync?.();
  };

  /** Syncs, reads back `chunks` (`length` bytes written at `offset`), compares and hashes them. */
  const verify = async (offset: number, length: number, chunks: Buffer[], full: boolean): Promise<void> => {
    await sync(full);
    await hooks.beforeReadBack?.(offset, length);
    let chunk = 0;
    let within = 0;
    for (let done = 0; done < length;) {
      const readBuffer = await hash.buffer();
      const want = Math.min(readBuffer.length, length - done);
      const { bytesRead } = await handle.read(readBuffer, 0, want, offset + done);
      if (bytesRead === 0) throw verifyFailed(`ends at ${offset + done} of ${offset + length} bytes`);
      const piece = readBuffer.subarray(0, bytesRead);
      // Compare `piece` with the sent chunks, from where the last piece stopped.
      for (let at = 0; at < piece.length;) {
        const sent = chunks[chunk]!;
        const span = Math.min(sent.length - within, piece.length - at);
        if (!piece.subarray(at, at + span).equals(sent.subarray(within, within + span))) {
          throw verifyFailed(
            `differs from what was sent within bytes ${offset + done + at}..${offset + done + at + span}`,
          );
        }
        at += span;
        within += span;
        if (within === sent.length) {
          chunk += 1;
          within = 0;
        }
      }
      done += bytesRead;
      hash.update(readBuffer, bytesRead); // hands readBuffer over: not used after this
    }
  };

  const flushBatch = async (): Promise<void> => {
    if (batchBytes === 0) return;
    await writeAll(handle, batch, written);
    written += batchBytes;
    batch = [];
    batchBytes = 0;
    if (written - regionStart >= REGION) {
      // One region verifies while the next is written; never two at once, so the hash
      // sees the regions in order and at most two regions' chunks are held.
      await verifying;
      const chunks = region;
      const offset = regionStart;
      region = [];
      regionStart = written;
      verifying = verify(offset, written - offset, chunks, false);
      verifying.catch(() => undefined); // awaited below; this only prevents an unhandled rejection
    }
  };

  try {
    // A Writable, not `for await`: the async iterator reads with `read()`, which concatenates
    // everything buffered into a new Buffer (a copy of every byte); a Writable is handed the
    // producer's chunks as they are.
    await pipeline(
      body,
      new Writable({
        highWaterMark: PIPELINE_HIGH_WATER_MARK,
        // decodeStrings (the default): every chunk arrives as a Buffer.
        write(chunk: Buffer, _encoding, callback) {
          if (written + batchBytes + chunk.length > byteLength) {
            callback(lengthMismatch(byteLength, `more than ${byteLength}`));
            return;
          }
          if (chunk.length === 0) return callback();
          batch.push(chunk);
          region.push(chunk);
          batchBytes += chunk.length;
          if (batchBytes < WRITE_BATCH) return callback();
          flushBatch().then(() => callback(), callback);
        },
      }),
    );
    await flushBatch();
    if (written !== byteLength) throw lengthMismatch(byteLength, String(written));
    await verifying;
    await verify(regionStart, written - regionStart, region, true);
    const { size } = await handle.stat();
    if (size !== byteLength) throw verifyFailed(`holds ${size} bytes, ${byteLength} were sent`);
    return { sha256: await hash.digest(), byteSize: size };
  } finally {
    await verifying.catch(() => undefined); // never leave a read running on a handle being closed
    await hash.close();
  }
}

/** writev(2) at `position` until every byte of `buffers` is written. */
async function writeAll(handle: FileHandle, buffers: Buffer[], position: number): Promise<void> {
  let pending = buffers;
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending, position);
    position += bytesWritten;
    let skip = bytesWritten;
    const rest: Buffer[] = [];
    for (const buffer of pending) {
      if (skip >= buffer.length) skip -= buffer.length;
      else {
        rest.push(skip > 0 ? buffer.subarray(skip) : buffer);
        skip = 0;
      }
    }
    if (bytesWritten === 0 && rest.length > 0) throw new Error("writev wrote nothing");
    pending = rest;
  }
}

function verifyFailed(detail: string): StorageError {
  return new StorageError("RECLAIM_ERR_STORAGE_VERIFY_FAILED", `the stored file ${detail}`);
}
