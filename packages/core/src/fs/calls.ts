/**
 * The filesystem calls of the walks (survey, removal, proven directories): synchronous
 * syscalls on the calling thread, in slices.
 *
 * A walk makes tens of thousands of lstat/readdir calls of a few microseconds each. Through
 * libuv's thread pool each one cost the main thread ~25 µs of dispatch and completion (a
 * thread woken, a callback, a promise), five times the syscall: the sweeps were bound by that,
 * not by the filesystem. So each call runs right away, and the process gives the event loop a
 * turn (a `setImmediate`) before a call once such calls have run for SLICE_MS, or SLICE_CALLS
 * of them were made, without one: timers (BullMQ's lock renewals), sockets and cancellation
 * are served at least that often. A walk stays an async function (its callers await each
 * call, and may run a few at once); the errors are node:fs's own (`code` ENOENT, ...).
 * The price: a filesystem that hangs a call now hangs the whole process (through the pool it
 * held one of four threads): the process's job locks then lapse, and BullMQ's stalled check
 * hands its jobs to another worker.
 */
import { lstatSync, readdirSync, renameSync, rmdirSync, statSync, unlinkSync, type Stats } from "node:fs";
import { performance } from "node:perf_hooks";

/** Longest run of calls without a turn of the event loop: in time, and in calls. */
export const SLICE_MS = 5;
export const SLICE_CALLS = 256;

/** When the current slice began; -1: the event loop has had a turn since the last call. */
let sliceStart = -1;
let sliceCalls = 0;
const turned = () => {
  sliceStart = -1;
};

/** Resolves once the event loop has had a turn (timers and I/O served). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function startSlice(): void {
  sliceStart = performance.now();
  sliceCalls = 0;
  // Runs at the next turn of the event loop, whoever's await got it there.
  setImmediate(turned);
}

async function slice<R>(call: () => R): Promise<R> {
  if (sliceStart < 0) startSlice();
  else if (sliceCalls >= SLICE_CALLS || performance.now() - sliceStart > SLICE_MS) {
    await turn();
    if (sliceStart < 0) startSlice();
  }
  sliceCalls += 1;
  return call();
}

export const lstat = (at: string): Promise<Stats> => slice(() => lstatSync(at));
export const stat = (at: string): Promise<Stats> => slice(() => statSync(at));
export const readdir = (at: string): Promise<string[]> => slice(() => readdirSync(at));
export const rename = (from: string, to: string): Promise<void> => slice(() => renameSync(from, to));
export const rmdir = (at: string): Promise<void> => slice(() => rmdirSync(at));
export const unlink = (at: string): Promise<void> => slice(() => unlinkSync(at));
