// Admission of one call on one upstream key against its per-minute limits, as the upstream counts
// them: a sliding 60 s window of admitted requests (RPM) and of their tokens (TPM). No I/O.
import type { AcquireResponse, KeyLimits } from "./key-pool-contract.ts";

/**
 * The upstream's window plus a margin: a call reaches the upstream some milliseconds after its
 * admission here, so a window of exactly 60 s could let the upstream count one call too many.
 */
export const WINDOW_MS = 61_000;
/** A full in-flight key frees a slot when some call ends; look again after this long. */
export const IN_FLIGHT_RETRY_MS = 250;

export interface Admission {
  at: number;
  tokens: number;
}

export interface KeyHealth {
  cooldownUntil: number | null;
  quarantined: boolean;
  inFlight: number;
}

export type AdmissionDecision = { admit: true } | Extract<AcquireResponse, { granted: false }>;

/**
 * Whether a call reserving `tokens` may start now. `window` holds the admissions of the last
 * 60 s in time order (older ones are ignored). On refusal, `retryAfterMs` is the earliest moment
 * the same call would be admitted if nothing else changed.
 */
export function decideAdmission(limits: KeyLimits, health: KeyHealth, window: readonly Admission[], tokens: number, now: number): AdmissionDecision {
  if (health.quarantined) return { granted: false, retryAfterMs: null, reason: "quarantined" };
  if (health.cooldownUntil !== null && health.cooldownUntil > now) {
    return { granted: false, retryAfterMs: health.cooldownUntil - now, reason: "cooldown" };
  }
  if (limits.maxInFlight !== null && health.inFlight >= limits.maxInFlight) {
    return { granted: false, retryAfterMs: IN_FLIGHT_RETRY_MS, reason: "in_flight" };
  }
  if (limits.tpm !== null && tokens > limits.tpm) return { granted: false, retryAfterMs: null, reason: "too_large" };
  const live = window.filter((a) => a.at > now - WINDOW_MS);
  if (limits.rpm !== null && live.length >= limits.rpm) {
    // The (len - rpm + 1)-th oldest admission must leave the window first.
    const leaving = live[live.length - limits.rpm];
    return { granted: false, retryAfterMs: Math.max(1, (leaving?.at ?? now) + WINDOW_MS - now), reason: "rpm" };
  }
  if (limits.tpm !== null) {
    const used = live.reduce((sum, a) => sum + a.tokens, 0);
    if (used + tokens > limits.tpm) {
      let freed = 0;
      for (const a of live) {
        freed += a.tokens;
        if (used - freed + tokens <= limits.tpm) return { granted: false, retryAfterMs: Math.max(1, a.at + WINDOW_MS - now), reason: "tpm" };
      }
      return { granted: false, retryAfterMs: WINDOW_MS, reason: "tpm" };
    }
  }
  return { admit: true };
}
