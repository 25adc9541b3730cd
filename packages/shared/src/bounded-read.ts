/**
 * Reading a file that an agent may have written (a sync folder's `manifest.json`, a session's
 * control-plane state, ...): never through a symbolic link and never more than a limit.
 *
 * The file is opened with O_NOFOLLOW (a link at its name fails with ELOOP instead of being
 * followed) and O_NONBLOCK (a FIFO planted at its name cannot block the open), then the
 * descriptor is fstat'ed: only a regular file within the limit is read, and at most limit+1
 * bytes are read from it, so a file that grows after the fstat is still refused rather than
 * read whole. The directories above the file are the caller's to prove (packages/core/src/fs,
 * `ProvenDir.readFile`): O_NOFOLLOW only covers the last component.
 *
 *   const read = await readFileBounded(path.join(dir, "control-plane.json"), 4 * 1024 * 1024);
 *   if (read.status === "ok") JSON.parse(read.data.toString("utf8"));
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { errnoCode } from "./errors";
import { sliced } from "./sliced";

const O_READ_NOFOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

export type BoundedRead =
  | { status: "ok"; data: Buffer }
  /** Nothing at that name (or a directory above it is gone). */
  | { status: "missing" }
  /** A symbolic link at that name: never followed. */
  | { status: "symlink" }
  /** A directory, FIFO, socket or device: not read. */
  | { status: "not_a_file" }
  /** Larger than the limit (by fstat, or while it was read). */
  | { status: "too_large" };

/**
 * Reads `file` whole when it is a regular file of at most `limit` bytes; throws only on I/O
 * errors. Its calls are synchronous, in the slices of sliced.ts (a file of up to `limit` bytes
 * is read within one call's slice).
 */
export async function readFileBounded(file: string, limit: number): Promise<BoundedRead> {
  return sliced(() => readBoundedSync(file, limit));
}

function readBoundedSync(file: string, limit: number): BoundedRead {
  let fd: number;
  try {
    fd = openSync(file, O_READ_NOFOLLOW);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return { status: "missing" };
    if (code === "ELOOP") return { status: "symlink" };
    // A FIFO without a writer, a socket, a device node that refuses reading.
    if (code === "ENXIO" || code === "ENODEV" || code === "EOPNOTSUPP") return { status: "not_a_file" };
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { status: "not_a_file" };
    if (stat.size > limit) return { status: "too_large" };
    // Sized by fstat; a file that grows meanwhile is read on in chunks, never past limit+1.
    const chunks: Buffer[] = [];
    let length = 0;
    let size = stat.size + 1;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(size, limit + 1 - length));
      const bytesRead = readSync(fd, chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      length += bytesRead;
      if (length > limit) return { status: "too_large" };
      // A regular file reads short only at its end: no second read to find it (one call per
      // file; what is appended later is not this read's, as after any last read). A short
      // read for another reason cuts the data: it does not parse, and the caller keeps what it
      // guards (unreadable).
      if (bytesRead < chunk.length) break;
      size = 8 * 1024;
    }
    return { status: "ok", data: Buffer.concat(chunks, length) };
  } finally {
    closeSync(fd);
  }
}
