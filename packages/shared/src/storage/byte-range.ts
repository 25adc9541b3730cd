import { StorageError } from "../errors";
import type { ByteRange } from "./provider";

/** Refuses ranges no provider can serve the same way (negative, empty, fractional). */
export function validateRange(range: ByteRange): void {
  const { offset, length } = range;
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 1) {
    throw new StorageError(
      "RECLAIM_ERR_STORAGE_RANGE_INVALID",
      `range needs an integer offset >= 0 and length >= 1 (got ${offset}, ${length})`,
    );
  }
}

export function rangePastEnd(range: ByteRange, byteSize: number): StorageError {
  return new StorageError(
    "RECLAIM_ERR_STORAGE_RANGE_INVALID",
    `offset ${range.offset} is at or past the end of a ${byteSize}-byte object`,
  );
}
