import { describe, expect, it } from "vitest";
import { chunkBySize } from "./size-chunks.ts";

const size = (n: number): number => n;

describe("chunkBySize", () => {
  it.each([
    { name: "no items, no chunks", items: [], max: 10, maxItems: undefined, chunks: [] },
    { name: "all in one when they fit", items: [3, 3, 3], max: 10, maxItems: undefined, chunks: [[3, 3, 3]] },
    { name: "exactly the budget stays together", items: [5, 5, 5], max: 10, maxItems: undefined, chunks: [[5, 5], [5]] },
    {
      name: "a new chunk when the next would pass the budget",
      items: [4, 4, 4, 4],
      max: 10,
      maxItems: undefined,
      chunks: [
        [4, 4],
        [4, 4],
      ],
    },
    { name: "an item over the budget goes alone", items: [2, 25, 2], max: 10, maxItems: undefined, chunks: [[2], [25], [2]] },
    { name: "an item over the budget first", items: [25, 2, 2], max: 10, maxItems: undefined, chunks: [[25], [2, 2]] },
    { name: "the item cap splits small items", items: [1, 1, 1, 1, 1], max: 100, maxItems: 2, chunks: [[1, 1], [1, 1], [1]] },
    { name: "zero-size items count against the item cap only", items: [0, 0, 0], max: 1, maxItems: 2, chunks: [[0, 0], [0]] },
  ])("$name", ({ items, max, maxItems, chunks }) => {
    expect(chunkBySize(items, size, max, maxItems)).toEqual(chunks);
  });

  it("keeps every item once, in order", () => {
    const items = Array.from({ length: 1_000 }, (_, i) => (i * 7919) % 97);
    const chunks = chunkBySize(items, size, 500, 40);
    expect(chunks.flat()).toEqual(items);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(40);
      if (chunk.length > 1) expect(chunk.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(500);
    }
  });

  it.each([
    { max: 0, maxItems: 1 },
    { max: 10, maxItems: 0 },
    { max: Number.NaN, maxItems: 1 },
  ])("refuses a budget of $max and an item cap of $maxItems", ({ max, maxItems }) => {
    expect(() => chunkBySize([1], size, max, maxItems)).toThrow(RangeError);
  });
});
