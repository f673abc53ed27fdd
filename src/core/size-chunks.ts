// Groups consecutive items so each group stays within a size budget: how a long list is written in
// a few statements, each binding one JSON text, instead of one statement per item. No I/O.

/**
 * Consecutive runs of `items`, in order, each at most `maxSize` by `sizeOf` summed (an item larger
 * than `maxSize` on its own alone) and at most `maxItems` long.
 */
export function chunkBySize<T>(items: readonly T[], sizeOf: (item: T) => number, maxSize: number, maxItems = Number.POSITIVE_INFINITY): T[][] {
  if (!(maxSize > 0) || !(maxItems >= 1)) throw new RangeError(`chunkBySize: maxSize and maxItems must be positive (got ${maxSize}, ${maxItems})`);
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    const itemSize = Math.max(0, sizeOf(item));
    if (current.length > 0 && (size + itemSize > maxSize || current.length >= maxItems)) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += itemSize;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
