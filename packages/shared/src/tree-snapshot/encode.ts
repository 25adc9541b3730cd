/**
 * The second pass of a capture: streams the planned entries as snapshot bytes, exactly
 * `plan.encodedSize` of them, reading each file in bounded chunks (memory stays at a chunk
 * or two whatever the tree's size, so the stream can go straight into `seal()`).
 *
 * Every file is opened with O_NOFOLLOW | O_NONBLOCK through the DirChain and fstat'ed: it must
 * be the regular file the plan saw (device, inode, size, mtime, ctime), yield exactly its
 * size, and be unchanged after the last byte; every link and directory is checked the same
 * way. Anything else errors the stream with `changed_during_capture`: the caller discards
 * what it stored and tries again later.
 */
import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync } from "node:fs";
import { Readable } from "node:stream";
import { DirChain } from "./dir-chain";
import { TreeSnapshotError } from "./errors";
import {
  encodeRecordHeader,
  KIND_CODE,
  KIND_END,
  MAGIC,
  SHA256_BYTES,
  TreeDigest,
  u16String,
  u64,
} from "./format";
import type { PlannedEntry, TreePlan } from "./plan";
import { errnoCode } from "../errors";
import { sliced } from "../sliced";

const O_FILE = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const READ_CHUNK = 1024 * 1024;

export interface SnapshotSummary {
  /** The tree digest (see format.ts): what a restore of this snapshot reproduces. */
  treeDigest: string;
  /** Records, the root's included. */
  records: number;
  files: number;
  fileBytes: number;
  /** Bytes of the encoded snapshot. */
  encodedSize: number;
}

export interface EncodedSnapshot {
  /** Exactly `plan.encodedSize` bytes, or an error. */
  stream: Readable;
  /** Settles when the stream has ended (or failed); reading the stream drives it. */
  summary: Promise<SnapshotSummary>;
}

export function encodeSnapshot(plan: TreePlan, options: { signal?: AbortSignal } = {}): EncodedSnapshot {
  let settle!: { resolve: (s: SnapshotSummary) => void; reject: (e: unknown) => void };
  const summary = new Promise<SnapshotSummary>((resolve, reject) => (settle = { resolve, reject }));
  summary.catch(() => undefined); // the stream carries the error too
  const generator = records(plan, options.signal, settle);
  const stream = Readable.from(generator, { objectMode: false, highWaterMark: READ_CHUNK });
  stream.once("close", () => {
    if (!stream.readableEnded) settle.reject(new Error("snapshot stream closed before its end"));
  });
  return { stream, summary };
}

async function* records(
  plan: TreePlan,
  signal: AbortSignal | undefined,
  settle: { resolve: (s: SnapshotSummary) => void; reject: (e: unknown) => void },
): AsyncGenerator<Buffer> {
  const whole = createHash("sha256");
  const tree = new TreeDigest();
  let written = 0;
  const out = (chunk: Buffer): Buffer => {
    whole.update(chunk);
    written += chunk.length;
    return chunk;
  };
  const rootEntry = plan.entries[0];
  const chain = await DirChain.open(plan.root, rootEntry?.path === "" ? rootEntry : undefined).catch(
    (error: unknown) => {
      settle.reject(error);
      throw error;
    },
  );
  try {
    yield out(MAGIC);
    for (const entry of plan.entries) {
      signal?.throwIfAborted();
      yield out(encodeRecordHeader(KIND_CODE[entry.kind], entry.path, entry.mode, entry.mtimeNs));
      if (entry.kind === "directory") {
        if (entry.path !== "") await chain.enter(entry.path, entry);
        tree.directory(entry.path, entry.mode);
      } else if (entry.kind === "symlink") {
        await checkLink(chain.childPath(entry.path), entry);
        yield out(u16String(entry.target!));
        tree.symlink(entry.path, entry.target!);
      } else {
        yield out(u64(entry.size));
        const content = createHash("sha256");
        const fd = await openPlannedFile(chain.childPath(entry.path), entry);
        try {
          for (let at = 0; at < entry.size;) {
            const want = Math.min(READ_CHUNK, entry.size - at);
            const buffer = Buffer.allocUnsafe(want);
            const bytesRead = await sliced(() => readSync(fd, buffer, 0, want, at));
            if (bytesRead === 0) throw changed(entry, "file got shorter while it was read");
            const chunk = bytesRead === want ? buffer : buffer.subarray(0, bytesRead);
            content.update(chunk);
            at += bytesRead;
            yield out(chunk);
          }
          const extra = await sliced(() => readSync(fd, Buffer.alloc(1), 0, 1, entry.size));
          if (extra !== 0) throw changed(entry, "file grew while it was read");
          await checkSame(fd, entry);
        } finally {
          closeSync(fd);
        }
        const sha = content.digest();
        yield out(sha);
        tree.file(entry.path, entry.mode, entry.size, sha);
      }
    }
    const end = Buffer.alloc(1 + 4 + SHA256_BYTES);
    end.writeUInt8(KIND_END, 0);
    end.writeUInt32BE(plan.entries.length, 1);
    const treeDigest = tree.digest();
    Buffer.from(treeDigest, "hex").copy(end, 5);
    yield out(end);
    const trailer = whole.digest();
    written += trailer.length;
    if (written !== plan.encodedSize) {
      throw new Error(`BUG: encoded ${written} bytes, planned ${plan.encodedSize}`);
    }
    settle.resolve({
      treeDigest,
      records: plan.entries.length,
      files: plan.files,
      fileBytes: plan.fileBytes,
      encodedSize: written,
    });
    yield trailer;
  } catch (error) {
    settle.reject(error);
    throw error;
  } finally {
    chain.close();
  }
}

/**
 * The file of `entry`, opened (a descriptor) without following a link and checked to be the
 * same file the plan saw. The encoder's calls are synchronous syscalls in slices (sliced.ts), as
 * the walks' are: through libuv's pool each cost the main thread more than the syscall, six a
 * file (open, fstat, two reads, fstat, close).
 */
async function openPlannedFile(at: string, entry: PlannedEntry): Promise<number> {
  let fd: number;
  try {
    fd = await sliced(() => openSync(at, O_FILE));
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ELOOP" || code === "ENOENT" || code === "ENOTDIR" || code === "ENXIO") {
      throw changed(entry, `cannot be opened as the same file (${code})`, error);
    }
    throw error;
  }
  try {
    await checkSame(fd, entry);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

async function checkSame(fd: number, entry: PlannedEntry): Promise<void> {
  const stat = await sliced(() => fstatSync(fd, { bigint: true }));
  if (
    !stat.isFile() ||
    stat.dev !== entry.dev ||
    stat.ino !== entry.ino ||
    Number(stat.size) !== entry.size ||
    stat.mtimeNs !== entry.mtimeNs ||
    stat.ctimeNs !== entry.ctimeNs
  ) {
    throw changed(entry, "file was replaced or written while it was captured");
  }
}

async function checkLink(at: string, entry: PlannedEntry): Promise<void> {
  const stat = await sliced(() => lstatSync(at, { bigint: true })).catch((error: unknown) => {
    throw changed(entry, "link vanished", error);
  });
  const target = await sliced(() => readlinkSync(at, { encoding: "buffer" })).catch(() => null);
  if (
    !stat.isSymbolicLink() ||
    stat.ino !== entry.ino ||
    stat.ctimeNs !== entry.ctimeNs ||
    target === null ||
    !target.equals(Buffer.from(entry.target!, "utf8"))
  ) {
    throw changed(entry, "link was replaced while it was captured");
  }
}

function changed(entry: PlannedEntry, detail: string, cause?: unknown): TreeSnapshotError {
  return new TreeSnapshotError("changed_during_capture", entry.path, detail, { cause });
}
