// Fault kinds and their OpenAI error bodies, the script/rates fault picker and the per-key RPM/TPM limiters.

import { errorBody } from "./openai.ts";
import type { ErrorBody } from "./openai.ts";
import type { Prng } from "./prng.ts";

export const FAULT_KINDS = [
  "429",
  "500",
  "502",
  "503",
  "400",
  "401",
  "404",
  "context_length",
  "insufficient_quota",
  "hang",
  /** The connection is cut before any response byte (a reset mid-request). */
  "drop",
  "malformed",
  "truncated",
  "no_usage",
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];
/** A script step: a fault kind, or "ok" for a normal answer. */
export type ScriptStep = FaultKind | "ok";

const KIND_SET: ReadonlySet<string> = new Set<string>(FAULT_KINDS);

export const isFaultKind = (s: unknown): s is FaultKind => typeof s === "string" && KIND_SET.has(s);
export const isScriptStep = (s: unknown): s is ScriptStep => s === "ok" || isFaultKind(s);

/** Faults answered with an HTTP error status right away (no latency, no stream). */
export const ERROR_STATUS: Readonly<Partial<Record<FaultKind, number>>> = {
  "429": 429,
  "500": 500,
  "502": 502,
  "503": 503,
  "400": 400,
  "401": 401,
  "404": 404,
  context_length: 400,
  insufficient_quota: 429,
};

/**
 * Picks the fault for one request. Script steps are consumed in order first; once the script is
 * exhausted, one PRNG draw per request is compared against the cumulative `rates` (in FAULT_KINDS
 * order), so a given seed + request sequence always yields the same faults.
 */
export class FaultPicker {
  #script: ScriptStep[];
  #cursor = 0;
  #rates: Array<[FaultKind, number]>;
  #prng: Prng;

  constructor(script: readonly ScriptStep[], rates: Partial<Record<FaultKind, number>>, prng: Prng) {
    this.#script = [...script];
    this.#rates = FAULT_KINDS.flatMap((k): Array<[FaultKind, number]> => {
      const p = rates[k];
      return p !== undefined && p > 0 ? [[k, p]] : [];
    });
    this.#prng = prng;
  }

  /** The script steps not consumed yet. */
  remainingScript(): ScriptStep[] {
    return this.#script.slice(this.#cursor);
  }

  /** Returns the fault for the next request, or undefined for a normal answer. */
  pick(): FaultKind | undefined {
    if (this.#cursor < this.#script.length) {
      const step = this.#script[this.#cursor++];
      return step === "ok" ? undefined : step;
    }
    if (this.#rates.length === 0) return undefined;
    const u = this.#prng.next();
    let acc = 0;
    for (const [kind, p] of this.#rates) {
      acc += p;
      if (u < acc) return kind;
    }
    return undefined;
  }
}

export type RpmDecision = { ok: true; remaining: number; resetMs: number } | { ok: false; retryAfterMs: number };

/** Sliding 60 s window of admitted request times per key; rejected requests do not count. */
export class RpmLimiter {
  static readonly WINDOW_MS = 60_000;
  #limit: number;
  #windows = new Map<string, number[]>();

  constructor(limitPerMinute: number) {
    this.#limit = limitPerMinute;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Whether one more request fits now; records nothing. */
  check(key: string, now: number): RpmDecision {
    const times = this.#window(key, now);
    const oldest = times[0];
    if (times.length >= this.#limit && oldest !== undefined) {
      return { ok: false, retryAfterMs: Math.max(1, Math.ceil(oldest + RpmLimiter.WINDOW_MS - now)) };
    }
    const first = oldest ?? now;
    return { ok: true, remaining: this.#limit - times.length - 1, resetMs: Math.max(0, Math.ceil(first + RpmLimiter.WINDOW_MS - now)) };
  }

  /** Counts an admitted request (after a successful `check` at the same `now`). */
  record(key: string, now: number): void {
    this.#window(key, now).push(now);
  }

  /** check + record. */
  admit(key: string, now: number): RpmDecision {
    const d = this.check(key, now);
    if (d.ok) this.record(key, now);
    return d;
  }

  #window(key: string, now: number): number[] {
    let times = this.#windows.get(key);
    if (times === undefined) {
      times = [];
      this.#windows.set(key, times);
    }
    const cutoff = now - RpmLimiter.WINDOW_MS;
    let drop = 0;
    while (drop < times.length && (times[drop] ?? 0) <= cutoff) drop++;
    if (drop > 0) times.splice(0, drop);
    return times;
  }
}

interface TpmEntry {
  at: number;
  tokens: number;
  /** Still inside the window (an expired entry no longer counts, whatever it settles to). */
  live: boolean;
}

interface TpmWindow {
  entries: TpmEntry[];
  used: number;
}

/** An admitted request's charge: starts at the reservation, `settle` sets the real amount (once). */
export interface TpmTicket {
  settle(tokens: number): void;
}

export type TpmDecision =
  | { ok: true; ticket: TpmTicket; remaining: number; resetMs: number }
  /** retryAfterMs undefined: the request alone exceeds the limit and can never be admitted. */
  | { ok: false; used: number; retryAfterMs: number | undefined };

/**
 * Tokens per minute per key over a sliding 60 s window, OpenAI-style: a request is admitted when
 * the window's tokens + its reservation (prompt + max_tokens) ≤ limit; the reservation is then
 * counted at the admission time and settled to the actual total when the request ends.
 * Rejected requests count nothing.
 */
export class TpmLimiter {
  static readonly WINDOW_MS = 60_000;
  #limit: number;
  #windows = new Map<string, TpmWindow>();

  constructor(limitPerMinute: number) {
    this.#limit = limitPerMinute;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Tokens counted in key's window now (reservations of in-flight requests included). */
  used(key: string, now: number): number {
    return this.#window(key, now).used;
  }

  admit(key: string, now: number, reserve: number): TpmDecision {
    const w = this.#window(key, now);
    if (w.used + reserve > this.#limit) {
      if (reserve > this.#limit) return { ok: false, used: w.used, retryAfterMs: undefined };
      // The earliest time enough of the window has slid out (later settlements may free tokens sooner).
      let freed = 0;
      let retryAfterMs = TpmLimiter.WINDOW_MS;
      for (const e of w.entries) {
        freed += e.tokens;
        if (w.used - freed + reserve <= this.#limit) {
          retryAfterMs = Math.max(1, Math.ceil(e.at + TpmLimiter.WINDOW_MS - now));
          break;
        }
      }
      return { ok: false, used: w.used, retryAfterMs };
    }
    const entry: TpmEntry = { at: now, tokens: reserve, live: true };
    w.entries.push(entry);
    w.used += reserve;
    let settled = false;
    const ticket: TpmTicket = {
      settle: (tokens: number): void => {
        if (settled) return;
        settled = true;
        if (entry.live) w.used += tokens - entry.tokens;
        entry.tokens = tokens;
      },
    };
    const first = w.entries[0]?.at ?? now;
    return { ok: true, ticket, remaining: Math.max(0, this.#limit - w.used), resetMs: Math.max(0, Math.ceil(first + TpmLimiter.WINDOW_MS - now)) };
  }

  #window(key: string, now: number): TpmWindow {
    let w = this.#windows.get(key);
    if (w === undefined) {
      w = { entries: [], used: 0 };
      this.#windows.set(key, w);
    }
    const cutoff = now - TpmLimiter.WINDOW_MS;
    let drop = 0;
    while (drop < w.entries.length) {
      const e = w.entries[drop];
      if (e === undefined || e.at > cutoff) break;
      e.live = false;
      w.used -= e.tokens;
      drop++;
    }
    if (drop > 0) w.entries.splice(0, drop);
    return w;
  }
}

export interface FaultResponse {
  status: number;
  headers: Record<string, string>;
  body: ErrorBody;
}

/** The HTTP error for an error-status fault kind (see ERROR_STATUS), in the OpenAI error shape. */
export function faultResponse(kind: FaultKind, model: string, promptTokens: number, retryAfterS: number): FaultResponse {
  const status = ERROR_STATUS[kind] ?? 500;
  const e = (message: string, type: string, param: string | null = null, code: string | null = null): FaultResponse => ({
    status,
    headers: {},
    body: errorBody(`${message} (mock fault)`, type, param, code),
  });
  switch (kind) {
    case "429": {
      const r = e(`Rate limit reached for ${model} on requests. Please try again in ${retryAfterS}s.`, "requests", null, "rate_limit_exceeded");
      r.headers = retryAfterHeaders(retryAfterS * 1000);
      return r;
    }
    case "insufficient_quota":
      return e("You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", null, "insufficient_quota");
    case "500":
      return e("The server had an error while processing your request. Sorry about that!", "server_error");
    case "502":
      return e("Bad gateway.", "server_error");
    case "503":
      return e("The engine is currently overloaded, please try again later.", "server_error");
    case "401":
      return e("Incorrect API key provided.", "invalid_request_error", null, "invalid_api_key");
    case "404":
      return e(`The model \`${model}\` does not exist or you do not have access to it.`, "invalid_request_error", "model", "model_not_found");
    case "context_length":
      return { status, headers: {}, body: contextLengthBody(128_000, Math.max(promptTokens, 128_001), undefined, "(mock fault)") };
    default:
      return e("Invalid request.", "invalid_request_error");
  }
}

/**
 * OpenAI's 400 `context_length_exceeded` body: for the `context_length` fault and for requests
 * over a configured context window (prompt + max_tokens > limit).
 */
export function contextLengthBody(limit: number, promptTokens: number, maxTokens: number | undefined, suffix: string): ErrorBody {
  const detail =
    maxTokens === undefined
      ? `your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`
      : `you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`;
  return errorBody(
    `This model's maximum context length is ${limit} tokens. However, ${detail} ${suffix}`,
    "invalid_request_error",
    "messages",
    "context_length_exceeded",
  );
}

/** `retry-after` (whole seconds, rounded up) and `retry-after-ms`. */
export function retryAfterHeaders(ms: number): Record<string, string> {
  const whole = Math.max(0, Math.ceil(ms));
  return { "retry-after": String(Math.ceil(whole / 1000)), "retry-after-ms": String(whole) };
}
