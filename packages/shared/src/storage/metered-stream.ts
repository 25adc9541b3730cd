import { createHash, type Hash } from "node:crypto";
import { Transform, type TransformCallback, type Readable } from "node:stream";
import { StorageError } from "../errors";
import { PIPELINE_HIGH_WATER_MARK } from "../stream-buffering";

/**
 * Passes bytes through while hashing them, and errors the moment the stream proves longer than
 * `expectedLength`, or at its end when shorter: an upload of known length can never store a
 * prefix or an overlong object as if it were complete.
 */
export class MeteredStream extends Transform {
  private readonly hash: Hash = createHash("sha256");
  private seen = 0;

  constructor(private readonly expectedLength: number) {
    super({ highWaterMark: PIPELINE_HIGH_WATER_MARK });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.expectedLength) {
      callback(lengthMismatch(this.expectedLength, `more than ${this.expectedLength}`));
      return;
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.seen !== this.expectedLength) {
      callback(lengthMismatch(this.expectedLength, String(this.seen)));
      return;
    }
    callback();
  }

  /** Valid once the stream has ended. */
  digest(): { sha256: string; byteSize: number } {
    return { sha256: this.hash.digest("hex"), byteSize: this.seen };
  }
}

/** SHA-256 and size of everything `source` yields. */
export async function measure(source: Readable): Promise<{ sha256: string; byteSize: number }> {
  const hash = createHash("sha256");
  let byteSize = 0;
  for await (const chunk of source) {
    hash.update(chunk as Buffer);
    byteSize += (chunk as Buffer).length;
  }
  return { sha256: hash.digest("hex"), byteSize };
}

export function validateByteLength(byteLength: number): void {
  if (!Number.isSafeInteger(byteLength) || byteLength < 0) {
    throw new StorageError(
      "RECLAIM_ERR_STORAGE_LENGTH_MISMATCH",
      `byteLength must be a non-negative integer`,
    );
  }
}

export function lengthMismatch(expected: number, got: string): StorageError {
  return new StorageError(
    "RECLAIM_ERR_STORAGE_LENGTH_MISMATCH",
    `declared ${expected} bytes, stream had ${got}`,
  );
}
