// Fault kinds and their OpenAI error bodies, the script/rates fault picker and the per-key RPM limiter.

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

  admit(key: string, now: number): RpmDecision {
    let times = this.#windows.get(key);
    if (times === undefined) {
      times = [];
      this.#windows.set(key, times);
    }
    const cutoff = now - RpmLimiter.WINDOW_MS;
    let drop = 0;
    while (drop < times.length && (times[drop] ?? 0) <= cutoff) drop++;
    if (drop > 0) times.splice(0, drop);
    const oldest = times[0];
    if (times.length >= this.#limit && oldest !== undefined) {
      return { ok: false, retryAfterMs: Math.max(1, Math.ceil(oldest + RpmLimiter.WINDOW_MS - now)) };
    }
    times.push(now);
    const first = times[0] ?? now;
    return { ok: true, remaining: this.#limit - times.length, resetMs: Math.max(0, Math.ceil(first + RpmLimiter.WINDOW_MS - now)) };
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
      return e(
        `This model's maximum context length is 128000 tokens. However, your messages resulted in ${Math.max(promptTokens, 128001)} tokens. Please reduce the length of the messages.`,
        "invalid_request_error",
        "messages",
        "context_length_exceeded",
      );
    default:
      return e("Invalid request.", "invalid_request_error");
  }
}

/** `retry-after` (whole seconds, rounded up) and `retry-after-ms`. */
export function retryAfterHeaders(ms: number): Record<string, string> {
  const whole = Math.max(0, Math.ceil(ms));
  return { "retry-after": String(Math.ceil(whole / 1000)), "retry-after-ms": String(whole) };
}
