// Back-off between attempts of a task: exponential with full jitter, Retry-After as a floor.
// No I/O; randomness is passed in so callers and tests can make it deterministic.

export interface BackoffOptions {
  baseMs: number;
  capMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 1_000, capMs: 60_000 };

/** Cloudflare Queues' longest delivery delay: 12 hours. */
export const MAX_QUEUE_DELAY_SECONDS = 43_200;
const MAX_DELAY_MS = MAX_QUEUE_DELAY_SECONDS * 1_000;

/**
 * Delay before retrying after `attempt` (1-based, the attempt that just failed) failed:
 * `random() × min(capMs, baseMs × 2^(attempt−1))` ("full jitter"). When the upstream sent a
 * Retry-After, the delay is at least that long: it may exceed `capMs`, but is clamped to 12 h.
 * A non-finite or negative `retryAfterMs` is ignored; an attempt below 1 counts as 1.
 */
export function backoffDelayMs(
  attempt: number,
  retryAfterMs: number | null,
  options: BackoffOptions = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  const n = Number.isFinite(attempt) ? Math.max(1, Math.floor(attempt)) : 1;
  const base = Math.max(0, options.baseMs);
  const cap = Math.max(0, options.capMs);
  // 2 ** large is Infinity and min(cap, Infinity) is cap, so this never overflows into NaN
  // (unless base is 0, where 0 × Infinity would be NaN: guarded by the ternary).
  const ceiling = base === 0 ? 0 : Math.min(cap, base * 2 ** (n - 1));
  const r = random();
  const jitter = Number.isFinite(r) ? Math.min(1, Math.max(0, r)) : 0;
  const jittered = jitter * ceiling;
  if (retryAfterMs === null || !Number.isFinite(retryAfterMs) || retryAfterMs < 0) return jittered;
  return Math.max(Math.min(retryAfterMs, MAX_DELAY_MS), jittered);
}

/** A delay in ms as Cloudflare Queues' `delaySeconds`: whole seconds, rounded up, within [0, 43200]. */
export function toQueueDelaySeconds(delayMs: number): number {
  if (Number.isNaN(delayMs)) return 0;
  const seconds = Math.ceil(delayMs / 1_000);
  return Math.min(MAX_QUEUE_DELAY_SECONDS, Math.max(0, seconds));
}
