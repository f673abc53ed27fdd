// The order in which a call asks an upstream's keys for a permit: a rotation that starts at a
// deterministic key per task, so a swarm's calls spread over the keys without coordination. No I/O.
import { hash32 } from "./hash32.ts";

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
