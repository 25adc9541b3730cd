/**
 * Independent filesystem reads of a batch, a few at once: each one is a round trip to the
 * thread pool, and awaiting them one by one leaves the disk idle between them. Items start in
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
