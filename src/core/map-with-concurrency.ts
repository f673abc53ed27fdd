// Maps over a list with at most `limit` promises in flight, keeping input order. No I/O of its own.

/**
 * Calls `fn` for every item, at most `limit` at once (a limit below 1 or NaN counts as 1), and
 * resolves to the results in input order.
 *
 * If any `fn` rejects (or throws), the returned promise rejects with that first error and no new
 * items are started; calls already running are not cancelled and their results are dropped.
 * Callers that must see every outcome pass an `fn` that never throws (returning a Result instead).
 */
export async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  const width = Math.min(items.length, Number.isNaN(limit) ? 1 : Math.max(1, Math.floor(limit)));
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next;
      next += 1;
      try {
        results[index] = await fn(items[index] as T, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}
