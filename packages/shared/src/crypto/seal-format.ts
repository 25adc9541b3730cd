/**
 * Byte layout of sealed objects, format version 1. Two objects per sealed payload:
 *
 *   <key>               the payload: a 32-byte preamble, then the chunks
 *     preamble          "RCLMSEAL" | u16 version | u16 0 | u32 chunkSize | payloadId[16]
 *     chunk i           AES-256-GCM(dataKey, nonce_i, aad_i, plaintext_i) | tag[16]
 *                       plaintext_i is chunkSize bytes, except the last chunk (0..chunkSize)
 *                       nonce_i = u32 0 | u64 i
 *                       aad_i   = preamble | u64 i | u8 final (1 on the last chunk only)
 *   <key>.seal-header   the key slot, 132 bytes
 *                       "RCLMSKEY" | u16 version | u16 0 | u32 chunkSize | payloadId[16]
 *                       | u64 plaintextSize | keyFingerprint[32]
 *                       | wrapNonce[12] | wrappedDataKey[32] | wrapTag[16]
 *                       the data key wrapped by the instance key with AES-256-GCM; the AAD is
 *                       the first 72 bytes, so every field of the header is authenticated.
 *
 * Why two objects: key rotation rewrites only the 132-byte header; the payload (many GiB,
 * maybe on S3, where objects cannot be edited in place) is never re-encrypted or copied,
 * and its SHA-256 in the ledger stays valid.
 * Why the index and final flag in each chunk's AAD: reordered, dropped or appended chunks,
 * and a payload cut at a chunk boundary, fail authentication instead of decrypting cleanly.
 * Integers are big-endian. A reader refuses any other magic or version: never guessed.
 */
import { SealError } from "../errors";

export const FORMAT_VERSION = 1;
export const PAYLOAD_MAGIC = Buffer.from("RCLMSEAL", "latin1");
export const HEADER_MAGIC = Buffer.from("RCLMSKEY", "latin1");
export const PREAMBLE_BYTES = 32;
export const HEADER_BYTES = 132;
export const TAG_BYTES = 16;
export const DATA_KEY_BYTES = 32;
export const PAYLOAD_ID_BYTES = 16;
const WRAP_AAD_BYTES = 72;
const WRAP_NONCE_BYTES = 12;

/** Plaintext bytes per chunk. Default 1 MiB: large enough for full AES-GCM speed, small enough that memory stays flat. */
export const DEFAULT_CHUNK_SIZE = 1024 * 1024;
export const MIN_CHUNK_SIZE = 4 * 1024;
export const MAX_CHUNK_SIZE = 16 * 1024 * 1024;

export interface PayloadParams {
  chunkSize: number;
  payloadId: Buffer;
}

export interface SealHeader extends PayloadParams {
  plaintextSize: number;
  keyFingerprint: Buffer;
  wrapNonce: Buffer;
  wrappedKey: Buffer;
  wrapTag: Buffer;
}

export function encodePreamble(params: PayloadParams): Buffer {
  const out = Buffer.alloc(PREAMBLE_BYTES);
  PAYLOAD_MAGIC.copy(out, 0);
  writeCommon(out, params);
  return out;
}

/** Parses and checks a payload preamble. */
export function decodePreamble(bytes: Buffer): PayloadParams {
  checkMagicAndVersion(bytes, PAYLOAD_MAGIC, "payload");
  return readCommon(bytes);
}

/** The header's first 72 bytes: everything the wrap authenticates. */
export function encodeHeaderAad(header: Omit<SealHeader, "wrapNonce" | "wrappedKey" | "wrapTag">): Buffer {
  const out = Buffer.alloc(WRAP_AAD_BYTES);
  HEADER_MAGIC.copy(out, 0);
  writeCommon(out, header);
  out.writeBigUInt64BE(BigInt(header.plaintextSize), 32);
  header.keyFingerprint.copy(out, 40);
  return out;
}

export function encodeHeader(header: SealHeader): Buffer {
  return Buffer.concat(
    [encodeHeaderAad(header), header.wrapNonce, header.wrappedKey, header.wrapTag],
    HEADER_BYTES,
  );
}

export function decodeHeader(bytes: Buffer): SealHeader {
  checkMagicAndVersion(bytes, HEADER_MAGIC, "header");
  if (bytes.length !== HEADER_BYTES) {
    throw new SealError(
      "RECLAIM_ERR_SEAL_TAMPERED",
      `header is ${bytes.length} bytes, version 1 has ${HEADER_BYTES}`,
    );
  }
  const nonceAt = WRAP_AAD_BYTES;
  const keyAt = nonceAt + WRAP_NONCE_BYTES;
  const tagAt = keyAt + DATA_KEY_BYTES;
  return {
    ...readCommon(bytes),
    plaintextSize: Number(bytes.readBigUInt64BE(32)),
    keyFingerprint: Buffer.from(bytes.subarray(40, nonceAt)),
    wrapNonce: Buffer.from(bytes.subarray(nonceAt, keyAt)),
    wrappedKey: Buffer.from(bytes.subarray(keyAt, tagAt)),
    wrapTag: Buffer.from(bytes.subarray(tagAt, HEADER_BYTES)),
  };
}

/** What a stored key header says without opening anything (activation's read-back check). */
export interface HeaderFacts {
  formatVersion: number;
  /** Hex fingerprint of the instance key wrapping the data key; null for a version this build cannot read. */
  keyFingerprint: string | null;
}

/**
 * Reads a key header's format version and key fingerprint. Every version starts with the
 * magic and a u16 version, so a header of a version this build cannot decode still says which
 * version it is. Throws SealError when the bytes are not a key header at all.
 */
export function inspectHeader(bytes: Buffer): HeaderFacts {
  if (bytes.length < 10 || !bytes.subarray(0, HEADER_MAGIC.length).equals(HEADER_MAGIC)) {
    throw new SealError(
      "RECLAIM_ERR_SEAL_UNKNOWN_VERSION",
      `header does not start with ${HEADER_MAGIC.toString("latin1")}`,
    );
  }
  const formatVersion = bytes.readUInt16BE(HEADER_MAGIC.length);
  if (formatVersion !== FORMAT_VERSION) return { formatVersion, keyFingerprint: null };
  return { formatVersion, keyFingerprint: decodeHeader(bytes).keyFingerprint.toString("hex") };
}

export function chunkNonce(index: number): Buffer {
  const nonce = Buffer.alloc(12);
  nonce.writeBigUInt64BE(BigInt(index), 4);
  return nonce;
}

export function chunkAad(preamble: Buffer, index: number, final: boolean): Buffer {
  const aad = Buffer.alloc(PREAMBLE_BYTES + 9);
  preamble.copy(aad, 0);
  aad.writeBigUInt64BE(BigInt(index), PREAMBLE_BYTES);
  aad[PREAMBLE_BYTES + 8] = final ? 1 : 0;
  return aad;
}

/** Stored payload bytes for `plaintextSize` bytes of plaintext: what `put` is told up front. */
export function sealedPayloadSize(plaintextSize: number, chunkSize: number): number {
  const chunks = Math.max(1, Math.ceil(plaintextSize / chunkSize));
  return PREAMBLE_BYTES + plaintextSize + chunks * TAG_BYTES;
}

export function validateChunkSize(chunkSize: number): void {
  if (!Number.isSafeInteger(chunkSize) || chunkSize < MIN_CHUNK_SIZE || chunkSize > MAX_CHUNK_SIZE) {
    throw new SealError(
      "RECLAIM_ERR_SEAL_UNKNOWN_VERSION",
      `chunk size ${chunkSize} is outside ${MIN_CHUNK_SIZE}..${MAX_CHUNK_SIZE} bytes`,
    );
  }
}

function writeCommon(out: Buffer, params: PayloadParams): void {
  out.writeUInt16BE(FORMAT_VERSION, 8);
  out.writeUInt16BE(0, 10);
  out.writeUInt32BE(params.chunkSize, 12);
  params.payloadId.copy(out, 16);
}

function readCommon(bytes: Buffer): PayloadParams {
  const chunkSize = bytes.readUInt32BE(12);
  validateChunkSize(chunkSize);
  return { chunkSize, payloadId: Buffer.from(bytes.subarray(16, 32)) };
}

function checkMagicAndVersion(bytes: Buffer, magic: Buffer, what: string): void {
  if (bytes.length < PREAMBLE_BYTES || !bytes.subarray(0, 8).equals(magic)) {
    throw new SealError(
      "RECLAIM_ERR_SEAL_UNKNOWN_VERSION",
      `${what} does not start with ${magic.toString("latin1")}`,
    );
  }
  const version = bytes.readUInt16BE(8);
  if (version !== FORMAT_VERSION || bytes.readUInt16BE(10) !== 0) {
    throw new SealError(
      "RECLAIM_ERR_SEAL_UNKNOWN_VERSION",
      `${what} has format version ${version}; this build reads ${FORMAT_VERSION}`,
    );
  }
}
