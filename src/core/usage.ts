// Token usage of one model call, normalized across vendors. No I/O.
// `cached_tokens` is part of `prompt_tokens` and `reasoning_tokens` part of `completion_tokens`
// (the OpenAI convention), so nothing is counted twice.
import { isRecord } from "./is-record.ts";

export interface Usage {
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  total_tokens: number;
}

/** A token count: a non-negative integer, else null. */
function count(value: unknown): number | null {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : null;
}

function detail(parent: Record<string, unknown>, object: string, field: string): number | null {
  const details = parent[object];
  return isRecord(details) ? count(details[field]) : null;
}

/**
 * Normalizes the `usage` object of an OpenAI-compatible response (OpenAI, DeepSeek, Moonshot/Kimi,
 * Anthropic's and Gemini's OpenAI-compatible endpoints, vLLM, Ollama) to a `Usage`.
 *
 * - prompt_tokens and completion_tokens must be non-negative integers, else the result is null:
 *   a missing usage is recorded as missing, never as zero. (DeepSeek's prompt_cache_hit_tokens +
 *   prompt_cache_miss_tokens stand in for a missing prompt_tokens.)
 * - cached_tokens: `prompt_tokens_details.cached_tokens` (OpenAI, Anthropic, Gemini, vLLM), else
 *   `prompt_cache_hit_tokens` (DeepSeek), else top-level `cached_tokens` (Moonshot/Kimi); clamped
 *   to prompt_tokens. reasoning_tokens: `completion_tokens_details.reasoning_tokens`, clamped to
 *   completion_tokens. Details that are missing, null or not counts are 0.
 * - total_tokens: the vendor's total when it equals prompt + completion. When the vendor's total
 *   is LARGER (Gemini reports thinking tokens only in total_tokens), the difference is output the
 *   model generated but left out of completion_tokens: it is added to completion_tokens and
 *   counted as reasoning (reasoning = max(reported reasoning, difference)), so the invariants
 *   below hold and the thinking is billed as output. A total that is smaller, or not a count,
 *   is ignored and prompt + completion is used.
 *
 * The result always has cached ≤ prompt, reasoning ≤ completion, total = prompt + completion.
 */
export function normalizeUsage(raw: unknown): Usage | null {
  if (!isRecord(raw)) return null;
  const hit = count(raw.prompt_cache_hit_tokens);
  const miss = count(raw.prompt_cache_miss_tokens);
  const prompt = count(raw.prompt_tokens) ?? (hit !== null && miss !== null ? hit + miss : null);
  let completion = count(raw.completion_tokens);
  if (prompt === null || completion === null) return null;

  const cached = detail(raw, "prompt_tokens_details", "cached_tokens") ?? hit ?? count(raw.cached_tokens) ?? 0;
  let reasoning = detail(raw, "completion_tokens_details", "reasoning_tokens") ?? 0;

  const vendorTotal = count(raw.total_tokens);
  if (vendorTotal !== null && vendorTotal > prompt + completion) {
    const unreported = vendorTotal - prompt - completion;
    completion += unreported;
    reasoning = Math.max(reasoning, unreported);
  }

  return {
    prompt_tokens: prompt,
    cached_tokens: Math.min(cached, prompt),
    completion_tokens: completion,
    reasoning_tokens: Math.min(reasoning, completion),
    total_tokens: prompt + completion,
  };
}

/**
 * The raw usage carried by one streamed chunk: top-level `usage` (OpenAI and most vendors, on the
 * final chunk when `stream_options.include_usage` is set; other chunks carry `usage: null`) or
 * `choices[0].usage` (Moonshot/Kimi). undefined when the chunk carries none.
 */
export function extractStreamUsage(chunk: unknown): unknown | undefined {
  if (!isRecord(chunk)) return undefined;
  if (chunk.usage !== undefined && chunk.usage !== null) return chunk.usage;
  const choices = chunk.choices;
  if (Array.isArray(choices)) {
    const first: unknown = choices[0];
    if (isRecord(first) && first.usage !== undefined && first.usage !== null) return first.usage;
  }
  return undefined;
}
