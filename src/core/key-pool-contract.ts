// The KeyPool Durable Object's RPC contract: one KeyPool per upstream API key (sharded by key id),
// the single authority on that key's request and token budgets. Types only, no I/O.

/** A key's limits, from the gateway config; null = unlimited. Sent with every acquire. */
export interface KeyLimits {
  /** Requests per minute (sliding 60 s window, as upstreams enforce it). */
  rpm: number | null;
  /** Tokens per minute: the reservation (prompt estimate + max_tokens) counts at admission. */
  tpm: number | null;
  /** Calls in flight at once. */
  maxInFlight: number | null;
}

export interface AcquireRequest {
  limits: KeyLimits;
  /** Tokens reserved for the call: prompt estimate + max_tokens. */
  tokens: number;
  /** A permit not released within this long is reclaimed (the caller died). */
  leaseMs: number;
}

export type AcquireResponse =
  | { granted: true; permitId: string }
  | {
      granted: false;
      /** When a permit could be granted at the earliest (ms from now); null = not until an operator acts. */
      retryAfterMs: number | null;
      reason: "rpm" | "tpm" | "in_flight" | "cooldown" | "quarantined" | "too_large";
    };

/** How the call ended, as far as the key's health is concerned. */
export type PermitOutcome =
  | "ok"
  /** The upstream said 429: the key cools down for `retryAfterMs` (or a default). */
  | "rate_limited"
  /** 401/403/insufficient_quota: the key is quarantined, never used again until reset. */
  | "key_rejected"
  /** Any other failure: no effect on the key. */
  | "error";

export interface ReleaseRequest {
  permitId: string;
  /** Tokens the call really used (usage total); null = unknown, keep the reservation. */
  tokens: number | null;
  outcome: PermitOutcome;
  retryAfterMs: number | null;
}

export interface KeyPoolStatus {
  inFlight: number;
  /** Requests and tokens admitted in the last 60 s. */
  requestsLastMinute: number;
  tokensLastMinute: number;
  cooldownUntil: number | null;
  quarantined: { since: number; reason: string } | null;
}
