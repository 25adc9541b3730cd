/**
 * The snapshot byte format (version 1). All integers big-endian.
 *
 *   magic     8 bytes  "RCLTREE1"
 *   records   in canonical order (below), each:
 *     kind    u8       1 directory, 2 file, 3 symbolic link
 *     path    u16 length + UTF-8 bytes, relative, '/'-separated ("" only for the root)
 *     mode    u32      permission bits (st_mode & 0o7777; 0 for links)
 *     mtime   u64      modification time, nanoseconds since the epoch
 *     file:   u64 size, then exactly `size` content bytes, then the content's SHA-256 (32)
 *     link:   u16 length + UTF-8 target bytes (stored, never resolved)
 *   end       u8 0, u32 record count, 32-byte tree digest, 32-byte SHA-256 of every byte before it
 *
 * Canonical order is a depth-first walk with each directory's names sorted bytewise: every
 * directory comes before its contents, so a restore creates parents first. Comparing two
 * paths component by component gives the same order, which the decoder enforces (a reordered,
 * duplicated or orphaned record is refused).
 *
 * The tree digest covers what a restore reproduces (kinds, paths, modes, file bytes, link
 * targets) and nothing else: not mtimes, so a restored tree has the digest of its snapshot.
 */
import { isUtf8 } from "node:buffer";
import { createHash, type Hash } from "node:crypto";
import { TreeSnapshotError } from "./errors";

export const MAGIC = Buffer.from("RCLTREE1", "latin1");
export const KIND_END = 0;
export const KIND_DIRECTORY = 1;
export const KIND_FILE = 2;
export const KIND_SYMLINK = 3;
export type EntryKind = "directory" | "file" | "symlink";
export const KIND_CODE: Record<EntryKind, number> = { directory: 1, file: 2, symlink: 3 };

/** Longest relative path and link target accepted (Linux PATH_MAX). */
export const MAX_PATH_BYTES = 4096;
export const SHA256_BYTES = 32;
export const END_BYTES = 1 + 4 + SHA256_BYTES + SHA256_BYTES;

export interface TreeSnapshotLimits {
  /** Entries of any kind (files, links, directories; the root not counted). */
  maxFiles: number;
  /** Bytes of one regular file. */
  maxFileBytes: number;
  /** Bytes of all regular files together. */
  maxTotalBytes: number;
}

/** Fixed part of a record: kind, path length, mode, mtime. */
export function recordHeaderBytes(pathBytes: number): number {
  return 1 + 2 + pathBytes + 4 + 8;
}

export function fileRecordBytes(pathBytes: number, size: number): number {
  return recordHeaderBytes(pathBytes) + 8 + size + SHA256_BYTES;
}

export function linkRecordBytes(pathBytes: number, targetBytes: number): number {
  return recordHeaderBytes(pathBytes) + 2 + targetBytes;
}

export function encodeRecordHeader(kind: number, relPath: string, mode: number, mtimeNs: bigint): Buffer {
  const pathBytes = Buffer.from(relPath, "utf8");
  const out = Buffer.alloc(recordHeaderBytes(pathBytes.length));
  let at = out.writeUInt8(kind, 0);
  at = out.writeUInt16BE(pathBytes.length, at);
  at += pathBytes.copy(out, at);
  at = out.writeUInt32BE(mode & 0o7777, at);
  out.writeBigUInt64BE(mtimeNs < 0n ? 0n : mtimeNs, at);
  return out;
}

export function u64(value: number): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(BigInt(value));
  return out;
}

export function u16String(value: string): Buffer {
  const bytes = Buffer.from(value, "utf8");
  const out = Buffer.alloc(2 + bytes.length);
  out.writeUInt16BE(bytes.length, 0);
  bytes.copy(out, 2);
  return out;
}

/** Component-wise bytewise order of relative paths ("" first): the canonical record order. */
export function comparePaths(a: string, b: string): number {
  if (a === b) return 0;
  if (a === "") return -1;
  if (b === "") return 1;
  const as = a.split("/");
  const bs = b.split("/");
  for (let i = 0; i < Math.min(as.length, bs.length); i += 1) {
    const c = Buffer.compare(Buffer.from(as[i]!, "utf8"), Buffer.from(bs[i]!, "utf8"));
    if (c !== 0) return c;
  }
  return as.length - bs.length;
}

export function parentOf(relPath: string): string {
  const slash = relPath.lastIndexOf("/");
  return slash < 0 ? "" : relPath.slice(0, slash);
}

/**
 * A relative path a snapshot may hold: non-empty components, none `.` or `..`, no NUL, no
 * leading or doubled '/', at most MAX_PATH_BYTES. Throws `reason` otherwise.
 */
export function checkRelativePath(relPath: string, reason: "unsafe_path" | "invalid_snapshot"): void {
  const bytes = Buffer.byteLength(relPath, "utf8");
  const bad =
    relPath === "" ||
    bytes > MAX_PATH_BYTES ||
    relPath.includes("\0") ||
    relPath.split("/").some((part) => part === "" || part === "." || part === "..");
  if (bad) throw new TreeSnapshotError(reason, relPath, "not a plain relative path");
}

/** A name read from disk as bytes is kept only if it is valid UTF-8 (it then round-trips). */
export function utf8Name(raw: Buffer, where: string): string {
  if (!isUtf8(raw)) {
    throw new TreeSnapshotError("unsupported_filesystem_entry", where, "name is not valid UTF-8");
  }
  return raw.toString("utf8");
}

const DIGEST_DOMAIN = Buffer.from("reclaim tree digest v1\0", "latin1");

/** Accumulates the tree digest, one entry at a time, in canonical order. */
export class TreeDigest {
  private readonly hash: Hash = createHash("sha256").update(DIGEST_DOMAIN);

  directory(relPath: string, mode: number): void {
    this.hash.update(encodeRecordHeader(KIND_DIRECTORY, relPath, mode, 0n));
  }

  file(relPath: string, mode: number, size: number, contentSha256: Buffer): void {
    this.hash.update(encodeRecordHeader(KIND_FILE, relPath, mode, 0n));
    this.hash.update(u64(size));
    this.hash.update(contentSha256);
  }

  symlink(relPath: string, target: string): void {
    this.hash.update(encodeRecordHeader(KIND_SYMLINK, relPath, 0, 0n));
    this.hash.update(u16String(target));
  }

  digest(): string {
    return this.hash.digest("hex");
  }
}
