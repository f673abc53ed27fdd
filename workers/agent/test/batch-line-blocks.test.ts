// The block reader serves each batch line's byte range from aligned blocks of the input file, each
// read once while cached: lines across a block boundary, the file's last (short) block, a range past
// the end, concurrent lines of one block, eviction.
import { describe, expect, it } from "vitest";
import { createBlockLineReader } from "../batch-line-blocks.ts";

const file = new TextEncoder().encode(Array.from({ length: 40 }, (_, i) => `{"line":${i}}`).join("\n"));

function source() {
  const reads: { offset: number; length: number }[] = [];
  return {
    reads,
    read: async (key: string, range: { offset: number; length: number }) => {
      reads.push(range);
      return key === "f" ? file.slice(range.offset, range.offset + range.length) : null;
    },
  };
}

describe("createBlockLineReader", () => {
  it.each([
    [0, 10],
    [60, 16],
    [62, 5],
    [file.length - 9, 9],
    [0, file.length],
  ])("reads the range at %i of %i bytes as the file holds it", async (offset, length) => {
    const reader = createBlockLineReader(source().read, 64, 4);
    expect(await reader.read("f", { offset, length })).toEqual(file.slice(offset, offset + length));
  });

  it("reads each block once for lines read in order, also when they are asked for at once", async () => {
    const s = source();
    const reader = createBlockLineReader(s.read, 64, 64);
    await Promise.all(Array.from({ length: 20 }, (_, i) => reader.read("f", { offset: i * 10, length: 10 })));
    expect(s.reads.map((r) => r.offset)).toEqual([0, 64, 128, 192]);
  });

  it("is null for a range past the file's end or a missing file", async () => {
    const reader = createBlockLineReader(source().read, 64, 4);
    expect(await reader.read("f", { offset: file.length - 2, length: 10 })).toBeNull();
    expect(await reader.read("gone", { offset: 0, length: 10 })).toBeNull();
  });

  it("keeps at most blocksKept blocks, dropping the least recently used", async () => {
    const s = source();
    const reader = createBlockLineReader(s.read, 64, 2);
    for (const offset of [0, 64, 0, 128, 0, 64]) await reader.read("f", { offset, length: 4 });
    expect(s.reads.map((r) => r.offset)).toEqual([0, 64, 128, 64]);
  });
});
