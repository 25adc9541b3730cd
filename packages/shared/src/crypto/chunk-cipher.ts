import { createCipheriv, createDecipheriv } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import { SealError } from "../errors";
import { PIPELINE_HIGH_WATER_MARK } from "../stream-buffering";
import {
  chunkAad,
  chunkNonce,
  decodePreamble,
  PREAMBLE_BYTES,
  sealedPayloadSize,
  TAG_BYTES,
  type PayloadParams,
} from "./seal-format";

/**
 * Plaintext in, sealed payload out (preamble, then authenticated chunks; see seal-format.ts).
 * A full chunk is held back until the next byte arrives, because only the end of the input
 * says which chunk is final. Memory: one chunk. Errors with RECLAIM_ERR_SEAL_LENGTH_MISMATCH
 * when the input is not exactly `plaintextSize` bytes, so a short source can never be
 * stored as a complete restore point.
 */
export class SealTransform extends Transform {
  private readonly pending: HeldBackChunk;
  private index = 0;
  private seen = 0;

  constructor(
    private readonly dataKey: Buffer,
    private readonly preamble: Buffer,
    params: PayloadParams,
    private readonly plaintextSize: number,
  ) {
    super({ highWaterMark: PIPELINE_HIGH_WATER_MARK });
    this.pending = new HeldBackChunk(params.chunkSize);
    this.push(preamble);
  }

  override _transform(data: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += data.length;
    if (this.seen > this.plaintextSize) {
      callback(lengthMismatch(this.plaintextSize, `more than ${this.plaintextSize}`));
      return;
    }
    this.pending.feed(data, 0, () => this.emitChunk(false));
    callback();
  }

  override _flush(callback: TransformCallback): void {
    if (this.seen !== this.plaintextSize) {
      callback(lengthMismatch(this.plaintextSize, String(this.seen)));
      return;
    }
    this.emitChunk(true);
    callback();
  }

  private emitChunk(final: boolean): void {
    const cipher = createCipheriv("aes-256-gcm", this.dataKey, chunkNonce(this.index));
    cipher.setAAD(chunkAad(this.preamble, this.index, final));
    const body = cipher.update(this.pending.content());
    cipher.final();
    this.push(body);
    this.push(cipher.getAuthTag());
    this.index += 1;
    this.pending.reset();
  }
}

/**
 * Sealed payload in, verified plaintext out. Each chunk is authenticated before a byte of it
 * is pushed. The stream errors (and pushes nothing more) on the first chunk that fails:
 * RECLAIM_ERR_SEAL_TAMPERED for a flipped bit, a reordered chunk, appended bytes or a payload
 * that does not belong to its header; RECLAIM_ERR_SEAL_TRUNCATED when the payload is shorter
 * than its header says. (Even without that length, a cut at a chunk boundary fails: the last
 * chunk left was sealed without the final flag.) A consumer must treat everything it read as void when the stream errors.
 */
export class OpenTransform extends Transform {
  private readonly pending: HeldBackChunk;
  private readonly preamble = Buffer.alloc(PREAMBLE_BYTES);
  private preambleFilled = 0;
  private index = 0;
  private produced = 0;
  private received = 0;
  private readonly payloadSize: number;

  constructor(
    private readonly dataKey: Buffer,
    private readonly expected: PayloadParams,
    private readonly plaintextSize: number,
  ) {
    super({ highWaterMark: PIPELINE_HIGH_WATER_MARK });
    this.pending = new HeldBackChunk(expected.chunkSize + TAG_BYTES);
    // The header (authenticated by the instance key) fixes the payload's exact length, which
    // tells a cut-off payload from a corrupt one even when the cut falls inside a chunk.
    this.payloadSize = sealedPayloadSize(plaintextSize, expected.chunkSize);
  }

  override _transform(data: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.received += data.length;
      if (this.received > this.payloadSize) {
        throw new SealError(
          "RECLAIM_ERR_SEAL_TAMPERED",
          `payload is longer than the ${this.payloadSize} bytes its header says`,
        );
      }
      let offset = 0;
      if (this.preambleFilled < PREAMBLE_BYTES) {
        const copied = data.copy(this.preamble, this.preambleFilled, 0, PREAMBLE_BYTES - this.preambleFilled);
        this.preambleFilled += copied;
        offset = copied;
        if (this.preambleFilled === PREAMBLE_BYTES) this.checkPreamble();
      }
      this.pending.feed(data, offset, () => this.openChunk(false));
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      if (this.received < this.payloadSize) {
        throw new SealError(
          "RECLAIM_ERR_SEAL_TRUNCATED",
          `payload ends after ${this.received} of ${this.payloadSize} bytes`,
        );
      }
      this.openChunk(true);
      if (this.produced !== this.plaintextSize) {
        throw new SealError(
          "RECLAIM_ERR_SEAL_TAMPERED",
          `payload holds ${this.produced} bytes, header says ${this.plaintextSize}`,
        );
      }
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  private checkPreamble(): void {
    const found = decodePreamble(this.preamble);
    if (found.chunkSize !== this.expected.chunkSize || !found.payloadId.equals(this.expected.payloadId)) {
      throw new SealError("RECLAIM_ERR_SEAL_TAMPERED", "payload does not belong to this header");
    }
  }

  private openChunk(final: boolean): void {
    const plaintext = this.decrypt(final);
    if (plaintext === null) {
      throw new SealError("RECLAIM_ERR_SEAL_TAMPERED", `chunk ${this.index} failed authentication`);
    }
    this.produced += plaintext.length;
    this.push(plaintext);
    this.index += 1;
    this.pending.reset();
  }

  private decrypt(final: boolean): Buffer | null {
    const sealed = this.pending.content();
    const bodyEnd = sealed.length - TAG_BYTES;
    const decipher = createDecipheriv("aes-256-gcm", this.dataKey, chunkNonce(this.index));
    decipher.setAAD(chunkAad(this.preamble, this.index, final));
    decipher.setAuthTag(sealed.subarray(bodyEnd));
    const plaintext = decipher.update(sealed.subarray(0, bodyEnd));
    try {
      decipher.final();
    } catch {
      return null;
    }
    return plaintext;
  }
}

/**
 * One chunk's worth of buffer that releases a full chunk only when a further byte arrives:
 * until the input ends, nobody knows whether a full chunk is the final one. An input buffer
 * that holds a whole chunk where none is pending is held by reference, not copied (streams
 * hand their buffers over; with 1 MiB reads and 1 MiB chunks, nothing is copied at all).
 */
class HeldBackChunk {
  private readonly bytes: Buffer;
  private held: Buffer | null = null;
  private filled = 0;

  constructor(private readonly size: number) {
    this.bytes = Buffer.allocUnsafe(size);
  }

  /** Takes `data[offset..]` in; `release` must consume `content()` and `reset()`. */
  feed(data: Buffer, offset: number, release: () => void): void {
    while (offset < data.length) {
      if (this.filled === this.size) release();
      if (this.filled === 0 && data.length - offset >= this.size) {
        this.held = data.subarray(offset, offset + this.size);
        this.filled = this.size;
        offset += this.size;
        continue;
      }
      const copied = data.copy(this.bytes, this.filled, offset);
      this.filled += copied;
      offset += copied;
    }
  }

  content(): Buffer {
    return this.held ?? this.bytes.subarray(0, this.filled);
  }

  reset(): void {
    this.filled = 0;
    this.held = null;
  }
}

function lengthMismatch(expected: number, got: string): SealError {
  return new SealError(
    "RECLAIM_ERR_SEAL_LENGTH_MISMATCH",
    `declared ${expected} plaintext bytes, stream had ${got}`,
  );
}
