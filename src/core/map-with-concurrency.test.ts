import { describe, expect, it } from "vitest";
import { mapWithConcurrency } from "./map-with-concurrency.ts";

/** Waits `turns` microtask turns: deterministic timing without timers. */
async function ticks(turns: number): Promise<void> {
  for (let i = 0; i < turns; i += 1) await Promise.resolve();
}

describe("mapWithConcurrency", () => {
  it.each([
    [0, 3, 0],
    [5, 1, 1],
    [10, 3, 3],
    [3, 10, 3],
    [8, 0, 1], // limit below 1 counts as 1
    [8, Number.NaN, 1],
    [8, 2.9, 2],
    [8, Number.POSITIVE_INFINITY, 8],
  ])("%i items, limit %d: results in order, at most %i at once", async (count, limit, expectedPeak) => {
    const items = Array.from({ length: count }, (_, i) => i);
    let running = 0;
    let peak = 0;
    const results = await mapWithConcurrency(items, limit, async (item, index) => {
      running += 1;
      peak = Math.max(peak, running);
      // later items finish first, so order must come from the index, not completion
      await ticks((count - item) % 4);
      running -= 1;
      return `${item}@${index}`;
    });
    expect(results).toEqual(items.map((i) => `${i}@${i}`));
    expect(peak).toBe(expectedPeak);
  });

  it("rejects with the first error and starts no new items", async () => {
    const started: number[] = [];
    const run = mapWithConcurrency([0, 1, 2, 3, 4, 5], 2, async (item) => {
      started.push(item);
      if (item === 1) throw new Error("boom");
      await ticks(20); // item 0 is still running when item 1 fails
      return item;
    });
    await expect(run).rejects.toThrow("boom");
    await ticks(100); // item 0 has finished by now: its worker must not pick up item 2
    expect(started).toEqual([0, 1]);
  });

  it("rejects when fn throws synchronously", async () => {
    const run = mapWithConcurrency([1], 1, (): Promise<number> => {
      throw new Error("sync");
    });
    await expect(run).rejects.toThrow("sync");
  });

  it("keeps undefined results", async () => {
    expect(await mapWithConcurrency([1, 2], 2, async () => undefined)).toEqual([undefined, undefined]);
  });
});
