// The baseline `npm run bench` puts next to edgeswarm: what a user writes by hand — one Node
// process, the openai SDK, W workers pulling tasks from a shared index, streaming with usage, a
// deadline per call, and retries of 429s, 5xx and broken calls with exponential back-off that
// honours retry-after. No ledger, no leases, nothing survives the process.
// Run it as a child process (`node promise-pool-baseline.ts`, options as JSON on stdin, the result
// as JSON on stdout) so its CPU figure is the pool's own, not the mock model's it talks to.
import OpenAI from "openai";
import { z } from "zod";
import { percentile } from "../../src/core/percentile.ts";
import { runJsonChild, serveJsonChild } from "./json-child.ts";
import { RunnerTimesSchema, RunnerWorkloadSchema, runPrompts } from "./runner-workload.ts";

export const PoolOptionsSchema = RunnerWorkloadSchema.extend({
  /** Calls per task, the first included. */
  maxAttempts: z.number().int().positive(),
  /** First back-off; doubled each retry, with jitter; a longer retry-after wins. */
  backoffMs: z.number().int().nonnegative().default(500),
});
export type PoolOptions = z.input<typeof PoolOptionsSchema>;

export const PoolResultSchema = RunnerTimesSchema.extend({
  tasks: z.number(),
  ok: z.number(),
  failed: z.number(),
  /** Model calls made, retries included. */
  calls: z.number(),
  retries: z.number(),
  /** Failed calls by cause (`429`, `500`, `timeout`, `malformed`, …). */
  errors: z.record(z.string(), z.number()),
  total_tokens: z.number(),
  /** Per call (every attempt), from the request to the end of its stream or its error. */
  p50_ms: z.number().nullable(),
  p95_ms: z.number().nullable(),
  /** The slowest call: with a heavy-tailed latency it, not N·L̄/W, can bound the wall. */
  max_ms: z.number().nullable(),
  /** The process's peak resident set (process.resourceUsage().maxRSS). */
  max_rss_mb: z.number(),
});
export type PoolResult = z.infer<typeof PoolResultSchema>;

type CallOutcome = { ok: true; tokens: number } | { ok: false; cause: string; retryable: boolean; retryAfterMs: number | undefined };

export async function runPromisePool(input: PoolOptions): Promise<PoolResult> {
  const options = PoolOptionsSchema.parse(input);
  const client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL, timeout: options.timeoutMs, maxRetries: 0, logLevel: "off" });
  const latencies: number[] = [];
  const errors: Record<string, number> = {};
  let ok = 0;
  let failed = 0;
  let retries = 0;
  let tokens = 0;

  const callOnce = async (prompt: string): Promise<CallOutcome> => {
    const started = performance.now();
    const deadline = AbortSignal.timeout(options.timeoutMs);
    let streaming = false;
    try {
      const stream = await client.chat.completions.create(
        {
          model: options.model,
          messages:
            options.system === undefined
              ? [{ role: "user", content: prompt }]
              : [
                  { role: "system", content: options.system },
                  { role: "user", content: prompt },
                ],
          max_tokens: options.maxTokens,
          stream: true,
          stream_options: { include_usage: true },
        },
        { signal: deadline },
      );
      streaming = true;
      // Kept as a hand-written script keeps its answers (the pool does nothing else with them).
      let _text = "";
      let finished = false;
      let usage = 0;
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        _text += choice?.delta?.content ?? "";
        if (choice?.finish_reason) finished = true;
        if (chunk.usage) usage = chunk.usage.total_tokens;
      }
      // The SDK ends the iteration quietly when the deadline aborts the body or the socket drops.
      if (!finished) return { ok: false, cause: deadline.aborted ? "timeout" : "cut_stream", retryable: true, retryAfterMs: undefined };
      return { ok: true, tokens: usage };
    } catch (error) {
      if (deadline.aborted) return { ok: false, cause: "timeout", retryable: true, retryAfterMs: undefined };
      return toFailure(error, streaming);
    } finally {
      latencies.push(performance.now() - started);
    }
  };

  const runTask = async (prompt: string): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const outcome = await callOnce(prompt);
      if (outcome.ok) {
        ok++;
        tokens += outcome.tokens;
        return;
      }
      errors[outcome.cause] = (errors[outcome.cause] ?? 0) + 1;
      if (!outcome.retryable || attempt >= options.maxAttempts) {
        failed++;
        return;
      }
      retries++;
      const backoff = options.backoffMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
      await new Promise((resolve) => setTimeout(resolve, Math.max(backoff, outcome.retryAfterMs ?? 0)));
    }
  };

  const times = await runPrompts(options.prompts, options.concurrency, runTask);
  return {
    tasks: options.prompts.length,
    ok,
    failed,
    calls: latencies.length,
    retries,
    errors,
    total_tokens: tokens,
    ...times,
    p50_ms: percentile(latencies, 50),
    p95_ms: percentile(latencies, 95),
    max_ms: percentile(latencies, 100),
    max_rss_mb: process.resourceUsage().maxRSS / 1024,
  };
}

/** What a careful script retries: 429 (not out of quota), 408/409/5xx, timeouts, broken connections and bodies. */
function toFailure(error: unknown, streaming: boolean): CallOutcome {
  if (error instanceof OpenAI.APIConnectionTimeoutError || error instanceof OpenAI.APIUserAbortError)
    return { ok: false, cause: "timeout", retryable: true, retryAfterMs: undefined };
  if (error instanceof OpenAI.APIConnectionError) return { ok: false, cause: "connection", retryable: true, retryAfterMs: undefined };
  if (error instanceof OpenAI.APIError) {
    const status = error.status;
    if (status === undefined) return { ok: false, cause: "error_event", retryable: true, retryAfterMs: undefined };
    const quota = error.code === "insufficient_quota";
    const retryable = !quota && (status === 429 || status === 408 || status === 409 || status >= 500);
    return { ok: false, cause: quota ? "insufficient_quota" : String(status), retryable, retryAfterMs: retryAfterMs(error.headers) };
  }
  // The SDK throws a SyntaxError for an SSE event whose data is not JSON.
  if (error instanceof SyntaxError) return { ok: false, cause: "malformed", retryable: true, retryAfterMs: undefined };
  // After the headers, anything else is the body breaking off (undici: "TypeError: terminated").
  if (streaming) return { ok: false, cause: "cut_stream", retryable: true, retryAfterMs: undefined };
  return { ok: false, cause: error instanceof Error ? error.name : "unknown", retryable: true, retryAfterMs: undefined };
}

function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number(headers?.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const s = Number(headers?.get("retry-after") ?? Number.NaN);
  return Number.isFinite(s) && s >= 0 ? s * 1000 : undefined;
}

/** Runs the pool in a child process; with `cpuProfileDir`, Node writes its CPU profile there (`--cpu-prof`). */
export function runPoolChild(options: PoolOptions, cpuProfileDir?: string): Promise<PoolResult> {
  const profile = cpuProfileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${cpuProfileDir}`];
  return runJsonChild(import.meta.filename, options, PoolResultSchema, profile);
}

if (import.meta.main) await serveJsonChild(PoolOptionsSchema, runPromisePool);
