// The call/token ledger behind GET /stats: counts only what responses actually sent.

export interface TokenCounts {
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
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
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** HTTP status of each chat-completion response started ("200", "429", ...). */
  by_status: Record<string, number>;
  by_model: Record<string, TokenCounts>;
  /** Keyed by `key_` + the first 12 hex digits of sha256(api key). */
  by_key: Record<string, TokenCounts>;
  /** Injected faults by kind ("rpm_per_key" for rejections by the per-key limit). */
  faults_injected: Record<string, number>;
  started_at: string;
  reset_at: string;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

const zero = (): TokenCounts => ({ calls: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

export class Stats {
  #startedAt = new Date().toISOString();
  #resetAt = this.#startedAt;
  #calls = 0;
  #completed = 0;
  #aborted = 0;
  #inFlight = 0;
  #maxInFlight = 0;
  #prompt = 0;
  #completion = 0;
  #byStatus = new Map<number, number>();
  #byModel = new Map<string, TokenCounts>();
  #byKey = new Map<string, TokenCounts>();
  #faults = new Map<string, number>();

  /** A chat-completion request arrived; pair with exactly one `end()`. */
  begin(): void {
    this.#calls++;
    this.#inFlight++;
    if (this.#inFlight > this.#maxInFlight) this.#maxInFlight = this.#inFlight;
  }

  end(outcome: "completed" | "aborted" | "other"): void {
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

  fault(kind: string): void {
    this.#faults.set(kind, (this.#faults.get(kind) ?? 0) + 1);
  }

  /** Usage that was just written to a client. */
  usage(model: string, keyId: string, u: Usage): void {
    this.#prompt += u.prompt_tokens;
    this.#completion += u.completion_tokens;
    for (const e of [this.#entry(this.#byModel, model), this.#entry(this.#byKey, keyId)]) {
      e.prompt_tokens += u.prompt_tokens;
      e.completion_tokens += u.completion_tokens;
      e.total_tokens += u.total_tokens;
    }
  }

  /** Zeroes every counter; in_flight keeps counting requests still open. */
  reset(): void {
    this.#resetAt = new Date().toISOString();
    this.#calls = this.#completed = this.#aborted = this.#prompt = this.#completion = 0;
    this.#maxInFlight = this.#inFlight;
    this.#byStatus.clear();
    this.#byModel.clear();
    this.#byKey.clear();
    this.#faults.clear();
  }

  snapshot(): StatsSnapshot {
    const copy = (m: Map<string, TokenCounts>): Record<string, TokenCounts> =>
      Object.fromEntries([...m].map(([k, v]) => [k, { ...v }]));
    return {
      mock: true,
      calls: this.#calls,
      completed: this.#completed,
      aborted: this.#aborted,
      in_flight: this.#inFlight,
      max_in_flight: this.#maxInFlight,
      prompt_tokens: this.#prompt,
      completion_tokens: this.#completion,
      total_tokens: this.#prompt + this.#completion,
      by_status: Object.fromEntries([...this.#byStatus].map(([k, v]) => [String(k), v])),
      by_model: copy(this.#byModel),
      by_key: copy(this.#byKey),
      faults_injected: Object.fromEntries(this.#faults),
      started_at: this.#startedAt,
      reset_at: this.#resetAt,
    };
  }

  #entry(map: Map<string, TokenCounts>, key: string): TokenCounts {
    let e = map.get(key);
    if (e === undefined) {
      e = zero();
      map.set(key, e);
    }
    return e;
  }
}
