import { createHash } from "node:crypto";
import { Worker } from "node:worker_threads";

/**
 * Streaming SHA-256 over bytes read into buffers it lends out, hashed on a worker thread for
 * large payloads, so that a verified write hashes its read-back bytes on the second core while
 * the main thread seals the next region (on the 2-core reference machine SHA-256 is a third
 * of the sealing process's CPU time).
 *
 *   const hash = createSha256(byteLength, pieceSize);
 *   const buffer = await hash.buffer();          // read the next piece into it
 *   hash.update(buffer, bytesRead);              // the buffer is handed over: do not touch it
 *   ... await hash.digest(); await hash.close(); // close() in any case, also after an error
 *
 * Off the main thread, a fixed set of `BUFFERS` buffers circulates: a buffer's memory moves to
 * the worker with its piece and comes back once hashed, so nothing is copied or allocated per
 * piece and memory stays at `BUFFERS * pieceSize` however far the worker falls behind
 * (`buffer()` waits for one to come back). Small payloads are not worth a thread (starting
 * one costs a few milliseconds): below `OFF_THREAD_MIN_BYTES` one buffer is reused inline.
 */
export interface Sha256Stream {
  /** A buffer of `pieceSize` bytes for the next piece; resolves when one is free. */
  buffer(): Promise<Buffer>;
  /** Hashes `buffer[0..length)` next; `buffer` (from `buffer()`) is handed back over. */
  update(buffer: Buffer, length: number): void;
  digest(): Promise<string>;
  close(): Promise<void>;
}

export const OFF_THREAD_MIN_BYTES = 32 * 1024 * 1024;
const BUFFERS = 3;

const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const hash = require("node:crypto").createHash("sha256");
parentPort.on("message", (message) => {
  if (message === null) {
    parentPort.postMessage({ digest: hash.digest("hex") });
    return;
  }
  hash.update(new Uint8Array(message.buffer, 0, message.length));
  parentPort.postMessage({ buffer: message.buffer }, [message.buffer]);
});
`;

export function createSha256(byteLength: number, pieceSize: number): Sha256Stream {
  return byteLength >= OFF_THREAD_MIN_BYTES ? offThreadSha256(pieceSize) : inlineSha256(pieceSize);
}

function inlineSha256(pieceSize: number): Sha256Stream {
  const hash = createHash("sha256");
  const only = Buffer.allocUnsafe(pieceSize);
  return {
    buffer: () => Promise.resolve(only),
    update: (buffer, length) => {
      hash.update(buffer.subarray(0, length));
    },
    digest: () => Promise.resolve(hash.digest("hex")),
    close: () => Promise.resolve(),
  };
}

type Waiter<T> = { resolve: (value: T) => void; reject: (error: Error) => void };

function offThreadSha256(pieceSize: number): Sha256Stream {
  const worker = new Worker(WORKER_SOURCE, { eval: true });
  worker.unref(); // never what keeps a process alive; close() ends it in any case
  const free: ArrayBuffer[] = [];
  let created = 0;
  let failure: Error | null = null;
  let waiting: Waiter<Buffer> | null = null;
  let digested: Waiter<string> | null = null;

  const fail = (error: Error): void => {
    failure ??= error;
    waiting?.reject(failure);
    digested?.reject(failure);
    waiting = digested = null;
  };
  worker.on("message", (message: { buffer?: ArrayBuffer; digest?: string }) => {
    if (message.digest !== undefined) {
      digested?.resolve(message.digest);
      digested = null;
    } else if (waiting) {
      waiting.resolve(Buffer.from(message.buffer!));
      waiting = null;
    } else {
      free.push(message.buffer!);
    }
  });
  worker.on("error", fail);
  worker.on("exit", (code) => fail(new Error(`the SHA-256 worker thread exited (code ${code})`)));

  return {
    buffer() {
      if (failure) return Promise.reject(failure);
      const ready = free.pop();
      if (ready) return Promise.resolve(Buffer.from(ready));
      if (created < BUFFERS) {
        created += 1;
        return Promise.resolve(Buffer.allocUnsafeSlow(pieceSize));
      }
      return new Promise<Buffer>((resolve, reject) => {
        waiting = { resolve, reject };
      });
    },
    update(buffer, length) {
      if (failure) throw failure;
      const memory = buffer.buffer as ArrayBuffer; // whole: only buffers from buffer() come here
      worker.postMessage({ buffer: memory, length }, [memory]);
    },
    digest() {
      if (failure) return Promise.reject(failure);
      return new Promise<string>((resolve, reject) => {
        digested = { resolve, reject };
        worker.postMessage(null);
      });
    },
    async close() {
      worker.removeAllListeners("exit");
      await worker.terminate();
    },
  };
}
