// The classes a failed task or model call is recorded with. No I/O.
// Upstream failures are classified once, in the model adapter; the rest are raised by the engine.

export const ERROR_CLASSES = [
  // retryable upstream failures
  "upstream_timeout",
  "upstream_connection",
  "rate_limited",
  "upstream_error",
  // permanent upstream failures (never retried)
  "bad_request",
  "auth",
  "not_found",
  "quota_exceeded",
  "context_length",
  // a response we could not use
  "malformed_response",
  "truncated_stream",
  // raised by the engine itself
  "lease_expired",
  /** The answer did not match response_format, also after its repair turn (the raw answer is kept). */
  "invalid_output",
  /** The agent used max_turns without giving a final answer. */
  "turn_limit",
  "dead_letter",
  "internal",
] as const;

export type ErrorClass = (typeof ERROR_CLASSES)[number];

export interface ClassifiedError {
  class: ErrorClass;
  retryable: boolean;
  /** From `retry-after-ms` / `retry-after`, when the upstream sent one. */
  retryAfterMs: number | null;
  /** Short, secret-free upstream message. */
  message: string;
}
