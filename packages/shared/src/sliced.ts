/**
 * Filesystem calls made synchronously on the calling thread, in slices: the calls that walk and
 * read agent-written trees (packages/core/src/fs/calls.ts, `readFileBounded`).
 *
 * A sweep makes tens of thousands of lstat, readdir, open and read calls of a few microseconds
 * each. Through libuv's thread pool each one cost the main thread ~25 µs of dispatch and
 * completion (a thread woken, a callback, a promise), five times the syscall: the sweeps were
 * bound by that, not by the filesystem. So each call runs right away, and the process gives the
 * event loop a turn (a `setImmediate`) before a call once such calls have run for SLICE_MS, or
 * SLICE_CALLS of them were made, without one: timers (BullMQ's lock renewals), sockets and
 * cancellation are served at least that often. Callers stay async (they await each call, and
 * may run a few at once); the errors are node:fs's own (`code` ENOENT, ...).
 * The price: a filesystem that hangs a call now hangs the whole process (through the pool it
 * held one of four threads): the process's job locks then lapse, and BullMQ's stalled check
 * hands its jobs to another worker.
 */
import { performance } from "node:perf_hooks";
import { setImmediate as turn } from "node:timers/promises";

/** Longest run of calls without a turn of the event loop: in time, and in calls. */
export const SLICE_MS = 5;
export const SLICE_CALLS = 256;

/** When the current slice began; -1: the event loop has had a turn since the last call. */
let sliceStart = -1;
let sliceCalls = 0;
const turned = () => {
  sliceStart = -1;
};

function startSlice(): void {
  sliceStart = performance.now();
  sliceCalls = 0;
  // Runs at the next turn of the event loop, whoever's await got it there.
  setImmediate(turned);
}

/** Runs the synchronous filesystem call `call` in the current slice, or after a turn. */
export async function sliced<R>(call: () => R): Promise<R> {
  const pending = turnIfDue();
  if (pending !== null) await pending;
  return call();
}

/**
 * Counts one synchronous call about to be made in the current slice; when the slice is used
 * up, a promise to await first (the event loop's turn). For a loop of calls that makes them
 * itself, without a promise per call: `const t = turnIfDue(); if (t) await t; lstatSync(...)`.
 */
export function turnIfDue(): Promise<void> | null {
  if (sliceStart < 0) startSlice();
  else if (sliceCalls >= SLICE_CALLS || performance.now() - sliceStart > SLICE_MS) return afterTurn();
  sliceCalls += 1;
  return null;
}

async function afterTurn(): Promise<void> {
  // Once the event loop has had a turn (timers and I/O served).
  await turn();
  if (sliceStart < 0) startSlice();
  sliceCalls += 1;
}
