// The order in which a call asks an upstream's keys for a permit: a rotation that starts at a
// deterministic key per task, so a swarm's calls spread over the keys without coordination. No I/O.

/**
 * The keys rotated to start at an offset fixed by (swarm, task), moved on by one per attempt so
 * a retry starts on another key than the attempt before it. Deterministic: a redelivery of the
 * same attempt asks the keys in the same order.
 */
export function orderKeys<K>(keys: readonly K[], swarmId: string, taskId: string, attempt: number): K[] {
  if (keys.length <= 1) return [...keys];
  const step = Number.isSafeInteger(attempt) && attempt > 0 ? attempt - 1 : 0;
  const offset = (hash32(`${swarmId}\u0000${taskId}`) + (step % keys.length)) % keys.length;
  return [...keys.slice(offset), ...keys.slice(0, offset)];
}

/**
 * 32-bit FNV-1a over UTF-16 code units with murmur3's avalanche, as route-model.ts hashes for the
 * model mix (kept private there; a shared export would let both use one copy).
 */
function hash32(text: string): number {
  let h = 0x811c9dc5;
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
