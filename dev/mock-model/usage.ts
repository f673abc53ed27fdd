// Vendor usage shapes: the `usage` object each OpenAI-compatible vendor sends, and the normalized
// counts an honest ledger records from it (computed here independently of src/core/usage.ts).

import type { Usage } from "./stats.ts";

export const USAGE_SHAPES = ["openai", "deepseek", "kimi", "anthropic", "gemini", "vllm", "ollama"] as const;
export type UsageShape = (typeof USAGE_SHAPES)[number];

const SHAPE_SET: ReadonlySet<string> = new Set<string>(USAGE_SHAPES);
export const isUsageShape = (s: unknown): s is UsageShape => typeof s === "string" && SHAPE_SET.has(s);

/** The ledger view: cached ⊆ prompt, reasoning ⊆ completion, total = prompt + completion. */
export interface NormalizedUsage {
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  total_tokens: number;
}

export interface UsageReport {
  shape: UsageShape;
  /** The `usage` object exactly as this vendor puts it on the wire. */
  wire: Record<string, unknown>;
  /** What a correct normalizer reads from `wire`. */
  normalized: NormalizedUsage;
}

/** Shapes that have a field for cached prompt tokens; the others always report (and normalize to) 0. */
const REPORTS_CACHED: Readonly<Record<UsageShape, boolean>> = {
  openai: true,
  deepseek: true,
  kimi: true,
  anthropic: true,
  gemini: false,
  vllm: false,
  ollama: false,
};

export interface UsageOptions {
  /** Share of prompt tokens reported as cached: floor(prompt × share) (default 0). */
  cachedShare?: number;
  /** Prompt tokens the prefix cache holds for this request (prefix-cache.ts); the larger of this and the share is reported. */
  cachedTokens?: number;
  /** The request's max_tokens: Gemini's hidden thoughts are capped so visible + thoughts ≤ max_tokens. */
  maxTokens?: number | undefined;
}

/**
 * The usage report of one answer whose visible output is `base.completion_tokens` tokens.
 *
 * - cached = max(floor(prompt × cachedShare), cachedTokens), at most prompt, for shapes that can
 *   report it (openai, deepseek, kimi, anthropic), else 0.
 * - gemini: hidden "thoughts" = floor(completion / 2) (capped at max_tokens − completion) appear
 *   only in total_tokens; normalized, they are output: completion + thoughts, all of it reasoning.
 * - reasoning is 0 for every other shape (the mock does not think).
 */
export function usageReport(base: Usage, shape: UsageShape, opts: UsageOptions = {}): UsageReport {
  const prompt = base.prompt_tokens;
  const completion = base.completion_tokens;
  const cached = REPORTS_CACHED[shape] ? Math.min(prompt, Math.max(Math.floor(prompt * (opts.cachedShare ?? 0)), opts.cachedTokens ?? 0)) : 0;
  let thoughts = 0;
  if (shape === "gemini") {
    thoughts = Math.floor(completion / 2);
    if (opts.maxTokens !== undefined) thoughts = Math.max(0, Math.min(thoughts, opts.maxTokens - completion));
  }
  const total = prompt + completion;
  const head = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total };
  let wire: Record<string, unknown>;
  switch (shape) {
    case "openai":
      wire = {
        ...head,
        prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      };
      break;
    case "deepseek":
      wire = { ...head, prompt_cache_hit_tokens: cached, prompt_cache_miss_tokens: prompt - cached, completion_tokens_details: { reasoning_tokens: 0 } };
      break;
    case "kimi":
      wire = { ...head, cached_tokens: cached };
      break;
    case "anthropic":
      wire = { ...head, prompt_tokens_details: { cached_tokens: cached } };
      break;
    case "gemini":
      wire = { ...head, total_tokens: total + thoughts };
      break;
    case "vllm":
      wire = { ...head, prompt_tokens_details: null };
      break;
    case "ollama":
      wire = head;
      break;
  }
  return {
    shape,
    wire,
    normalized: {
      prompt_tokens: prompt,
      cached_tokens: cached,
      completion_tokens: completion + thoughts,
      reasoning_tokens: thoughts,
      total_tokens: total + thoughts,
    },
  };
}

/** Adds every numeric leaf of `obj` into `into`, keyed by dotted path (`prompt_tokens_details.cached_tokens`). */
export function addNumericLeaves(obj: Record<string, unknown>, into: Map<string, number>, prefix = ""): void {
  for (const [k, v] of Object.entries(obj)) {
    const path = prefix === "" ? k : `${prefix}.${k}`;
    if (typeof v === "number") into.set(path, (into.get(path) ?? 0) + v);
    else if (typeof v === "object" && v !== null && !Array.isArray(v)) addNumericLeaves(v as Record<string, unknown>, into, path);
  }
}
