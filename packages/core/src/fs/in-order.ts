/**
 * Bounded parallelism for a batch's filesystem work, one module for every domain: each step on
 * an entry is a few syscalls, each one a round trip through libuv's thread pool, so one entry
 * at a time leaves the process idle most of the time. A few entries at once overlap those
 * round trips; results are taken in the entries' order, so what a batch decides does not
 * depend on which read finished first, and nothing started is left running behind the caller.
 *
 *   mapInOrder   the completed prefix of a list, `width` at a time, until `stop()`
 *   takeInOrder  each result handed to `take` in order, until it returns false
 *   eachBounded  every item, order of completion free
 */

/**
 * Independent filesystem reads of a batch, a few at once. Items start in
 * order, at most `width` at a time; none starts once `stop()` says so or one has failed.
 * Every started item is awaited before returning (nothing keeps running behind the batch);
 * the first failure (in item order) is thrown. The results are the completed prefix, in
 * order: what a cursor can advance over.
 */
export async function mapInOrder<T, R>(
  items: readonly T[],
  width: number,
  fn: (item: T) => Promise<R>,
  stop: () => boolean = () => false,
): Promise<R[]> {
  const results: { value?: R; error?: unknown; done: boolean }[] = [];
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (next < items.length && !failed && !stop()) {
      const slot: { value?: R; error?: unknown; done: boolean } = { done: false };
      results[next] = slot;
      const item = items[next++]!;
      try {
        slot.value = await fn(item);
        slot.done = true;
      } catch (error) {
        slot.error = error;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  const failure = results.find((r) => r.error !== undefined);
  if (failure) throw failure.error;
  const prefix: R[] = [];
  for (const r of results) {
    if (!r.done) break;
    prefix.push(r.value as R);
  }
  return prefix;
}

/** Entries worked on at once: libuv's pool has 4 threads by default; twice that keeps it fed. */
export const BOUNDED_WIDTH = 8;

type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

/**
 * Runs `work` over `items`, at most `BOUNDED_WIDTH` at once and never more than `room()` (how many
 * more results could still be taken) not yet taken, and hands each result to `take` in the
 * items' order. Once `take` returns false nothing more is started: work already started
 * finishes and its results are dropped. A failure is thrown once the work started before it
 * has finished (nothing is left running behind the caller), in the items' order: as a loop
 * of awaits would have thrown it. Returns how many results were taken.
 */
export async function takeInOrder<T, R>(
  items: readonly T[],
  work: (item: T) => Promise<R>,
  take: (result: R, item: T) => boolean,
  room: () => number = () => Infinity,
): Promise<number> {
  const started: Promise<Settled<R>>[] = [];
  let taken = 0;
  let stopped = false;
  const start = () => {
    while (
      !stopped &&
      started.length < items.length &&
      started.length - taken < Math.min(BOUNDED_WIDTH, room())
    ) {
      // Settled at once, so a failure waiting its turn is never an unhandled rejection.
      started.push(
        work(items[started.length]!).then(
          (value): Settled<R> => ({ ok: true, value }),
          (error: unknown): Settled<R> => ({ ok: false, error }),
        ),
      );
    }
  };
  try {
    start();
    while (taken < started.length) {
      const next = await started[taken]!;
      if (!next.ok) throw next.error;
      if (!take(next.value, items[taken]!)) break;
      taken += 1;
      start();
    }
  } finally {
    stopped = true;
    await Promise.all(started.slice(taken));
  }
  return taken;
}

/**
 * Runs `work` over every item, at most `BOUNDED_WIDTH` at once, in no particular order of
 * completion. The first failure stops new work; it is thrown once what was started has
 * finished (as a crash there would leave the rest for a later batch).
 */
export async function eachBounded<T>(
  items: readonly T[],
  work: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | null = null;
  const worker = async () => {
    while (failure === null && next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(BOUNDED_WIDTH, items.length) }, worker));
  if (failure !== null) throw (failure as { error: unknown }).error;
}
