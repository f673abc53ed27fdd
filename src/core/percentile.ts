// Percentiles of a list of numbers (latency p50/p95). No I/O.

/**
 * The nearest-rank percentile: the smallest value such that at least p% of the values are ≤ it
 * (rank ⌈p/100 × n⌉ on a sorted copy; p = 0 gives the minimum). The input is not changed.
 * null for an empty list (after dropping NaNs) or a p outside [0, 100].
 */
export function percentile(values: readonly number[], p: number): number | null {
  if (!(p >= 0 && p <= 100)) return null;
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? null;
}
