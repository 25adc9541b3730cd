/**
 * Reading a snapshot stream back, in constant memory, refusing anything that is not exactly
 * what `encodeSnapshot` writes: the magic, records in strict canonical order with their
 * parents before them, paths that stay below the root, modes, the caller's limits, every
 * file's SHA-256, the record count, the tree digest and the SHA-256 of the whole stream, and
 * nothing after it. Any of these failing is `invalid_snapshot`.
 *
 * `validateSnapshot` only reads (proving a capture restorable before anything is removed);
 * `restoreSnapshot` (restore.ts) hands each record to a writer as it is read.
 */
import { createHash, type Hash } from "node:crypto";
import type { Readable } from "node:stream";
import { TreeSnapshotError } from "./errors";
import {
  checkRelativePath,
  comparePaths,
  KIND_DIRECTORY,
  KIND_END,
  KIND_FILE,
  KIND_SYMLINK,
  MAGIC,
  MAX_PATH_BYTES,
  parentOf,
  SHA256_BYTES,
  TreeDigest,
  type TreeSnapshotLimits,
} from "./format";
import type { SnapshotSummary } from "./encode";

export interface DecodedEntry {
  path: string;
  mode: number;
  mtimeNs: bigint;
}

/** Receives records in order; a rejection stops decoding with that error. */
export interface SnapshotVisitor {
  directory(entry: DecodedEntry): Promise<void>;
  fileStart(entry: DecodedEntry, size: number): Promise<void>;
  fileChunk(chunk: Buffer): Promise<void>;
  /** Called once the file's bytes matched their recorded SHA-256. */
  fileEnd(): Promise<void>;
  symlink(entry: DecodedEntry, target: string): Promise<void>;
  /** Called after the whole stream was verified. */
  end(): Promise<void>;
}

export interface DecodeOptions {
  limits: TreeSnapshotLimits;
  /** The tree digest the ledger recorded: a snapshot of another tree is refused. */
  expectedTreeDigest?: string;
  signal?: AbortSignal;
}

export async function validateSnapshot(stream: Readable, options: DecodeOptions): Promise<SnapshotSummary> {
  return decodeSnapshot(stream, options, null);
}

export async function decodeSnapshot(
  stream: Readable,
  options: DecodeOptions,
  visitor: SnapshotVisitor | null,
): Promise<SnapshotSummary> {
  const reader = new ByteReader(stream);
  try {
    return await decodeRecords(reader, options, visitor);
  } finally {
    reader.close();
  }
}

async function decodeRecords(
  reader: ByteReader,
  options: DecodeOptions,
  visitor: SnapshotVisitor | null,
): Promise<SnapshotSummary> {
  const { limits } = options;
  if (!(await reader.take(MAGIC.length)).equals(MAGIC)) throw invalid(null, "not a snapshot (magic)");
  const tree = new TreeDigest();
  const dirs: string[] = [""];
  let previous: string | null = null;
  let records = 0;
  let entries = 0;
  let files = 0;
  let fileBytes = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const kind = (await reader.take(1))[0]!;
    if (kind === KIND_END) break;
    if (kind !== KIND_DIRECTORY && kind !== KIND_FILE && kind !== KIND_SYMLINK) {
      throw invalid(previous, `unknown record kind ${kind}`);
    }
    const relPath = await readString(reader, previous);
    const head = await reader.take(12);
    const mode = head.readUInt32BE(0);
    const mtimeNs = head.readBigUInt64BE(4);
    records += 1;
    if (relPath === "") {
      if (previous !== null || kind !== KIND_DIRECTORY) throw invalid("", "root record out of place");
    } else {
      checkRelativePath(relPath, "invalid_snapshot");
      if (previous !== null && comparePaths(previous, relPath) >= 0) {
        throw invalid(relPath, "records out of canonical order");
      }
      const parent = parentOf(relPath);
      while (dirs.length > 1 && dirs.at(-1) !== parent) dirs.pop();
      if (dirs.at(-1) !== parent) throw invalid(relPath, "parent directory has no record before it");
      entries += 1;
      if (entries > limits.maxFiles) throw invalid(relPath, `more than ${limits.maxFiles} entries`);
    }
    if (mode > 0o7777 || (kind === KIND_SYMLINK && mode !== 0)) throw invalid(relPath, "bad mode");
    previous = relPath;
    const entry = { path: relPath, mode, mtimeNs };
    if (kind === KIND_DIRECTORY) {
      if (relPath !== "") dirs.push(relPath);
      tree.directory(relPath, mode);
      await visitor?.directory(entry);
    } else if (kind === KIND_SYMLINK) {
      const target = await readString(reader, relPath);
      if (target === "") throw invalid(relPath, "empty link target");
      tree.symlink(relPath, target);
      await visitor?.symlink(entry, target);
    } else {
      const sizeBig = (await reader.take(8)).readBigUInt64BE(0);
      if (sizeBig > BigInt(limits.maxFileBytes)) throw invalid(relPath, "file over the size limit");
      const size = Number(sizeBig);
      fileBytes += size;
      files += 1;
      if (fileBytes > limits.maxTotalBytes) throw invalid(relPath, "files over the total limit");
      await visitor?.fileStart(entry, size);
      const content = createHash("sha256");
      for await (const chunk of reader.chunks(size)) {
        content.update(chunk);
        await visitor?.fileChunk(chunk);
      }
      const sha = content.digest();
      if (!(await reader.take(SHA256_BYTES)).equals(sha)) throw invalid(relPath, "file content hash differs");
      tree.file(relPath, mode, size, sha);
      await visitor?.fileEnd();
    }
  }
  const countAndDigest = await reader.take(4 + SHA256_BYTES);
  if (countAndDigest.readUInt32BE(0) !== records) throw invalid(null, "record count differs");
  const treeDigest = tree.digest();
  if (countAndDigest.subarray(4).toString("hex") !== treeDigest) throw invalid(null, "tree digest differs");
  if (options.expectedTreeDigest !== undefined && options.expectedTreeDigest !== treeDigest) {
    throw invalid(null, "snapshot is of another tree than the one recorded");
  }
  const computed = reader.digestSoFar();
  if (!(await reader.take(SHA256_BYTES, false)).equals(computed)) throw invalid(null, "stream hash differs");
  if (!(await reader.atEnd())) throw invalid(null, "bytes after the end of the snapshot");
  await visitor?.end();
  return { treeDigest, records, files, fileBytes, encodedSize: reader.consumed };
}

async function readString(reader: ByteReader, where: string | null): Promise<string> {
  const length = (await reader.take(2)).readUInt16BE(0);
  if (length > MAX_PATH_BYTES) throw invalid(where, "name too long");
  const raw = await reader.take(length);
  const value = raw.toString("utf8");
  if (!Buffer.from(value, "utf8").equals(raw)) throw invalid(where, "name is not valid UTF-8");
  return value;
}

function invalid(where: string | null, detail: string): TreeSnapshotError {
  return new TreeSnapshotError("invalid_snapshot", where, detail);
}

/** Pulls exact byte counts from a stream, hashing what it hands out (until told not to). */
class ByteReader {
  private readonly iterator: AsyncIterator<Buffer>;
  private pending: Buffer = Buffer.alloc(0);
  private readonly whole: Hash = createHash("sha256");
  consumed = 0;

  constructor(private readonly stream: Readable) {
    this.iterator = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  }

  private async fill(): Promise<boolean> {
    const next = await this.iterator.next();
    if (next.done) return false;
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    return true;
  }

  /** Exactly `n` bytes (small n: fixed fields and names). */
  async take(n: number, hash = true): Promise<Buffer> {
    while (this.pending.length < n) {
      if (!(await this.fill())) throw invalid(null, "stream is truncated");
    }
    const out = this.pending.subarray(0, n);
    this.pending = this.pending.subarray(n);
    this.consumed += n;
    if (hash) this.whole.update(out);
    return out;
  }

  /** Exactly `n` bytes as the stream delivers them (file contents), hashed. */
  async *chunks(n: number): AsyncGenerator<Buffer> {
    let left = n;
    while (left > 0) {
      if (this.pending.length === 0 && !(await this.fill())) throw invalid(null, "stream is truncated");
      const out = this.pending.subarray(0, Math.min(left, this.pending.length));
      this.pending = this.pending.subarray(out.length);
      left -= out.length;
      this.consumed += out.length;
      this.whole.update(out);
      yield out;
    }
  }

  digestSoFar(): Buffer {
    return this.whole.digest();
  }

  async atEnd(): Promise<boolean> {
    return this.pending.length === 0 && !(await this.fill()) && this.pending.length === 0;
  }

  close(): void {
    void this.iterator.return?.();
    this.stream.destroy();
  }
}
