// A fast, well-spread 32-bit string hash for deterministic routing decisions. No I/O.

/**
 * FNV-1a over UTF-16 code units, finished with murmur3's avalanche so nearby strings spread.
 * Another `seed` (FNV's offset basis by default) gives another, independent hash of the same text.
 */
export function hash32(text: string, seed = 0x811c9dc5): number {
  let h = seed;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
