// Reads batch lines through blocks of their input file: a line's range is served from the aligned
// block(s) that hold it, each block read from R2 once per isolate while it stays cached. A lane runs
// a batch's lines in file order, so 10,000 lines of ~200 bytes cost a few block reads, not 10,000
// range reads. Only the lines' own bytes leave this module.
import type { BatchLineReader } from "./run-batch-line.ts";

/** 256 KiB: a few hundred typical lines a read; the cache holds BLOCKS_KEPT of them (8 MiB). */
export const BLOCK_BYTES = 256 * 1024;
const BLOCKS_KEPT = 32;

export function createBlockLineReader(read: BatchLineReader["read"], blockBytes = BLOCK_BYTES, blocksKept = BLOCKS_KEPT): BatchLineReader {
  // Insertion order is the eviction order (oldest first); a hit moves its block to the end.
  const blocks = new Map<string, Promise<Uint8Array | null>>();
  const blockOf = (key: string, index: number): Promise<Uint8Array | null> => {
    const id = `${key}\u0000${index}`;
    const cached = blocks.get(id);
    if (cached !== undefined) {
      blocks.delete(id);
      blocks.set(id, cached);
      return cached;
    }
    const loading = read(key, { offset: index * blockBytes, length: blockBytes });
    blocks.set(id, loading);
    // A failed read is not kept: the next line asks again.
    loading.catch(() => blocks.delete(id));
    while (blocks.size > blocksKept) {
      const oldest = blocks.keys().next().value;
      if (oldest === undefined) break;
      blocks.delete(oldest);
    }
    return loading;
  };
  return {
    async read(key, range) {
      const first = Math.floor(range.offset / blockBytes);
      const last = Math.floor((range.offset + Math.max(range.length, 1) - 1) / blockBytes);
      const line = new Uint8Array(range.length);
      for (let index = first; index <= last; index += 1) {
        const block = await blockOf(key, index);
        if (block === null) return null;
        const blockStart = index * blockBytes;
        const from = Math.max(range.offset, blockStart);
        const to = Math.min(range.offset + range.length, blockStart + block.byteLength);
        // A block shorter than the range (the file ends inside it): the line is not in the file.
        if (to < Math.min(range.offset + range.length, blockStart + blockBytes)) return null;
        line.set(block.subarray(from - blockStart, to - blockStart), from - range.offset);
      }
      return line;
    },
  };
}
