// The call/token ledger behind GET /stats: counts only what responses actually sent.

import { addNumericLeaves } from "./usage.ts";
import type { UsageReport } from "./usage.ts";

/**
 * Token counts of the usage objects actually sent. The five token fields are the NORMALIZED counts
 * an honest ledger records (cached ⊆ prompt, reasoning ⊆ completion, total = prompt + completion);
 * `raw` sums every numeric field of the vendor usage objects as sent, keyed by dotted path.
 */
export interface TokenCounts {
  calls: number;
  /** Responses that carried a usage object. */
  usage_reports: number;
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  total_tokens: number;
  raw: Record<string, number>;
}

export interface StatsSnapshot {
  mock: true;
  /** Chat-completion requests received. */
  calls: number;
  /** Chat completions fully delivered as a valid answer (not errors, malformed, truncated or hung). */
  completed: number;
  /** Chat-completion requests whose client disconnected before the response finished. */
  aborted: number;
  in_flight: number;
  max_in_flight: number;
  /**
   * Chat-completion requests whose response headers have not been sent yet (a streamed answer
   * during its ttfb, a non-streamed one during its whole latency), and the peak of that number.
   */
  waiting_for_headers: number;
  max_waiting_for_headers: number;
  /** Responses that carried a usage object. */
  usage_reports: number;
  /** Normalized, as in TokenCounts. */
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  total_tokens: number;
  /** Sums of the vendor usage fields as sent (dotted paths). */
  raw: Record<string, number>;
  /** HTTP status of each chat-completion response started ("200", "429", ...). */
  by_status: Record<string, number>;
  by_model: Record<string, TokenCounts>;
  /** Keyed by `key_` + the first 12 hex digits of sha256(api key). */
  by_key: Record<string, TokenCounts>;
  /** Injected faults by kind ("rpm_per_key" / "tpm_per_key" for rejections by the per-key limits). */
  faults_injected: Record<string, number>;
  /** The largest prompt (in tokens) of any valid chat-completion request, answered or not. */
  max_prompt_tokens: number;
  /** Requests refused with 400 context_length_exceeded by the context window (not by a fault). */
  context_exceeded: number;
  /** Answers with tool calls fully sent. */
  tool_call_responses: number;
  /** Valid requests whose system prompt starts with [edgeswarm:planner] / [edgeswarm:reducer]. */
  planner_requests: number;
  reducer_requests: number;
  /** Valid requests whose last user message starts with [edgeswarm:repair]. */
  repair_requests: number;
  /** GET /fixtures/… requests (redirects included). */
  fixture_requests: number;
  /** POST /tools/lint requests, and those refused for their signature (401). */
  webhook_calls: number;
  webhook_rejected: number;
  /**
   * Chat-completion requests that carried a `CF-Worker` header: under `wrangler dev`, those that
   * passed through miniflare's outbound interceptor, which sets it (production's edge sets it too).
   */
  cf_worker_requests: number;
  started_at: string;
  reset_at: string;
  /**
   * When the first chat-completion request since the last reset arrived, and when the last one
   * ended (epoch ms; null before any): the upstream's own view of a run's wall, the same for any client.
   */
  first_request_at: number | null;
  last_end_at: number | null;
}

/** A chat-completion request as the mock saw it: from its arrival to its end (epoch ms). */
export interface RequestSpan {
  start: number;
  end: number;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

interface Entry {
  calls: number;
  reports: number;
  prompt: number;
  cached: number;
  completion: number;
  reasoning: number;
  raw: Map<string, number>;
}

/** The plain counters of the snapshot. */
export const COUNTERS = [
  "context_exceeded",
  "tool_call_responses",
  "planner_requests",
  "reducer_requests",
  "repair_requests",
  "fixture_requests",
  "webhook_calls",
  "webhook_rejected",
  "cf_worker_requests",
] as const;
export type Counter = (typeof COUNTERS)[number];

const zeroCounters = (): Record<Counter, number> => Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Record<Counter, number>;

const zero = (): Entry => ({ calls: 0, reports: 0, prompt: 0, cached: 0, completion: 0, reasoning: 0, raw: new Map() });

const tokenCounts = (e: Entry): TokenCounts => ({
  calls: e.calls,
  usage_reports: e.reports,
  prompt_tokens: e.prompt,
  cached_tokens: e.cached,
  completion_tokens: e.completion,
  reasoning_tokens: e.reasoning,
  total_tokens: e.prompt + e.completion,
  raw: Object.fromEntries(e.raw),
});

export class Stats {
  /** The most request spans kept since the last reset (0: none). */
  readonly #spanLimit: number;
  #spans: RequestSpan[] = [];
  #startedAt = new Date().toISOString();
  #resetAt = this.#startedAt;
  #calls = 0;
  #completed = 0;
  #aborted = 0;
  #inFlight = 0;
  #maxInFlight = 0;
  #waiting = 0;
  #maxWaiting = 0;
  #all = zero();
  #byStatus = new Map<number, number>();
  #byModel = new Map<string, Entry>();
  #byKey = new Map<string, Entry>();
  #faults = new Map<string, number>();
  #maxPrompt = 0;
  #counters = zeroCounters();
  #firstRequestAt: number | null = null;
  #lastEndAt: number | null = null;

  /** `keepSpans`: keep the spans of up to this many chat requests since the last reset (`spans()`). */
  constructor(options: { keepSpans?: number } = {}) {
    this.#spanLimit = Math.max(0, Math.floor(options.keepSpans ?? 0));
  }

  /**
   * A chat-completion request arrived; pair with exactly one `headers()` and one `end()`, which
   * takes the epoch ms returned here (its span's start).
   */
  begin(): number {
    const now = Date.now();
    this.#firstRequestAt ??= now;
    this.#calls++;
    this.#inFlight++;
    if (this.#inFlight > this.#maxInFlight) this.#maxInFlight = this.#inFlight;
    this.#waiting++;
    if (this.#waiting > this.#maxWaiting) this.#maxWaiting = this.#waiting;
    return now;
  }

  /** The request's response headers went out (or it ended without any): it no longer waits for them. */
  headers(): void {
    this.#waiting--;
  }

  end(outcome: "completed" | "aborted" | "other", startedAt: number): void {
    const now = Date.now();
    this.#lastEndAt = now;
    // A request begun before the last reset is not this run's.
    const thisRun = this.#firstRequestAt !== null && startedAt >= this.#firstRequestAt;
    if (thisRun && this.#spans.length < this.#spanLimit) this.#spans.push({ start: startedAt, end: now });
    this.#inFlight--;
    if (outcome === "completed") this.#completed++;
    else if (outcome === "aborted") this.#aborted++;
  }

  /** The request was attributed to a model and key (once it passed validation). */
  attribute(model: string, keyId: string): void {
    this.#entry(this.#byModel, model).calls++;
    this.#entry(this.#byKey, keyId).calls++;
  }

  status(code: number): void {
    this.#byStatus.set(code, (this.#byStatus.get(code) ?? 0) + 1);
  }

  /** A valid request's prompt size (for max_prompt_tokens). */
  prompt(tokens: number): void {
    if (tokens > this.#maxPrompt) this.#maxPrompt = tokens;
  }

  count(counter: Counter): void {
    this.#counters[counter]++;
  }

  fault(kind: string): void {
    this.#faults.set(kind, (this.#faults.get(kind) ?? 0) + 1);
  }

  /** Usage that was just written to a client. */
  usage(model: string, keyId: string, r: UsageReport): void {
    const n = r.normalized;
    for (const e of [this.#all, this.#entry(this.#byModel, model), this.#entry(this.#byKey, keyId)]) {
      e.reports++;
      e.prompt += n.prompt_tokens;
      e.cached += n.cached_tokens;
      e.completion += n.completion_tokens;
      e.reasoning += n.reasoning_tokens;
      addNumericLeaves(r.wire, e.raw);
    }
  }

  /** Zeroes every counter; in_flight and waiting_for_headers keep counting requests still open. */
  reset(): void {
    this.#resetAt = new Date().toISOString();
    this.#calls = this.#completed = this.#aborted = 0;
    this.#all = zero();
    this.#maxInFlight = this.#inFlight;
    this.#maxWaiting = this.#waiting;
    this.#byStatus.clear();
    this.#byModel.clear();
    this.#byKey.clear();
    this.#faults.clear();
    this.#maxPrompt = 0;
    this.#counters = zeroCounters();
    this.#firstRequestAt = null;
    this.#lastEndAt = null;
    this.#spans = [];
  }

  /** The spans of the chat requests that began and ended since the last reset, in the order they ended (none unless kept). */
  spans(): readonly RequestSpan[] {
    return this.#spans;
  }

  snapshot(): StatsSnapshot {
    const copy = (m: Map<string, Entry>): Record<string, TokenCounts> => Object.fromEntries([...m].map(([k, v]) => [k, tokenCounts(v)]));
    const { calls: _calls, ...all } = tokenCounts(this.#all);
    return {
      mock: true,
      calls: this.#calls,
      completed: this.#completed,
      aborted: this.#aborted,
      in_flight: this.#inFlight,
      max_in_flight: this.#maxInFlight,
      waiting_for_headers: this.#waiting,
      max_waiting_for_headers: this.#maxWaiting,
      ...all,
      by_status: Object.fromEntries([...this.#byStatus].map(([k, v]) => [String(k), v])),
      by_model: copy(this.#byModel),
      by_key: copy(this.#byKey),
      faults_injected: Object.fromEntries(this.#faults),
      max_prompt_tokens: this.#maxPrompt,
      ...this.#counters,
      started_at: this.#startedAt,
      reset_at: this.#resetAt,
      first_request_at: this.#firstRequestAt,
      last_end_at: this.#lastEndAt,
    };
  }

  #entry(map: Map<string, Entry>, key: string): Entry {
    let e = map.get(key);
    if (e === undefined) {
      e = zero();
      map.set(key, e);
    }
    return e;
  }
}
