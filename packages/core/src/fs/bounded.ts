/**
 * Filesystem work on many entries, a few at a time. One small operation at a time spends most
 * of its time waiting for each syscall's round trip through libuv's thread pool (4 threads);
 * a few at once keep it busy. Order of results is the order of the items.
 */

/**
 * `fn` over `items`, at most `limit` at once; results in the items' order. On a failure it
 * starts no more, waits for those under way (nothing is left running behind the caller) and
 * throws the first failure.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const lane = async () => {
    while (failure === null && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!, i);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure !== null) throw (failure as { error: unknown }).error;
  return results;
}
