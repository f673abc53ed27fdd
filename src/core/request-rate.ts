// API requests a minute, as token buckets: a bucket holds up to `rpm` requests and refills at
// rpm/60 a second, so a burst of `rpm` passes and the sustained rate is `rpm` a minute, with no
// window edge at which twice the limit slips through. No I/O; the TenantLimiter DO keeps the buckets.

export interface RateBucket {
  /** Requests left (fractional while refilling). */
  tokens: number;
  /** Epoch ms of `tokens`. */
  at: number;
}

export type RateDecision = { admit: true; buckets: RateBucket[] } | { admit: false; retryAfterS: number };

/** A bucket's level at `now`: refilled since `at`, never above `rpm`; a new bucket starts full. */
export function refillBucket(bucket: RateBucket | null, rpm: number, now: number): RateBucket {
  if (bucket === null) return { tokens: rpm, at: now };
  const elapsedMs = Math.max(0, now - bucket.at);
  return { tokens: Math.min(rpm, bucket.tokens + (elapsedMs * rpm) / 60_000), at: Math.max(now, bucket.at) };
}

/**
 * One request against every limit at once (the tenant's, the key's): admitted only if each bucket
 * has a whole request left, and then taken from each; refused otherwise, taking from none, with the
 * whole seconds until the emptiest bucket holds one request again (at least 1, for Retry-After).
 */
export function takeRequest(limits: readonly { bucket: RateBucket | null; rpm: number }[], now: number): RateDecision {
  const levels = limits.map(({ bucket, rpm }) => ({ level: refillBucket(bucket, rpm, now), rpm }));
  const waitMs = Math.max(0, ...levels.map(({ level, rpm }) => (level.tokens >= 1 ? 0 : ((1 - level.tokens) * 60_000) / rpm)));
  if (waitMs > 0) return { admit: false, retryAfterS: Math.max(1, Math.ceil(waitMs / 1_000)) };
  return { admit: true, buckets: levels.map(({ level }) => ({ tokens: level.tokens - 1, at: level.at })) };
}
