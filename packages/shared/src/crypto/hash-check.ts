import { createHash } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import { SealError } from "../errors";
import { PIPELINE_HIGH_WATER_MARK } from "../stream-buffering";

/**
 * Passes stored bytes through and errors at their end when their SHA-256 is not the one the
 * ledger recorded. Placed before the chunk opener, so the final chunk (decrypted only at the
 * end) is never emitted from a payload whose hash is wrong.
 */
export class HashCheck extends Transform {
  private readonly hash = createHash("sha256");

  constructor(private readonly expectedSha256: string) {
    super({ highWaterMark: PIPELINE_HIGH_WATER_MARK });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    const actual = this.hash.digest("hex");
    callback(
      actual === this.expectedSha256.toLowerCase()
        ? null
        : new SealError("RECLAIM_ERR_SEAL_HASH_MISMATCH", `stored payload hashes to ${actual}`),
    );
  }
}
