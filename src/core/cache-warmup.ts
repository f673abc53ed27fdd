// Prompt-cache warm-up (limits.cache_warmup): whether a swarm's tasks share a prompt prefix the
// upstream caches (OpenAI, DeepSeek, Kimi: ≥ 1,024 tokens), estimated; what the cache saved. No I/O.
// The upstream caches a prefix only once a first request with it was processed, so a swarm that
// starts every task at once pays the whole prefix on each; one started first, then the rest, pays once.
import type { ModelPrice } from "./pricing.ts";

/** The shortest prefix the providers cache (platform.openai.com/docs/guides/prompt-caching). */
export const CACHE_MIN_PREFIX_TOKENS = 1_024;

/**
 * The held tasks are released this long after the first one was granted, if no call of the swarm
 * was recorded by then: a first call that hangs or dies never stalls the swarm for longer.
 */
export const WARMUP_RELEASE_MAX_MS = 5_000;

/**
 * A hold that lasts this long after the warm-up task was granted is one whose release the lanes a
 * prior sized for early headers would start too slowly: the release starts the whole window at
 * once, and a lane starts only its gate's slots before its first headers, as many again each time
 * to headers after. With headers within a few ms of the send (the local mock at `--ttfb 0`: the
 * release came within this in every swarm measured) a lane's gate frees at once, and the prior's
 * lanes carry the window. An upstream whose first byte takes longer (any remote one) gets the lanes.
 */
export const RELEASE_TOP_UP_MS = 50;

/**
 * When a hold calls for lanes sized for its release (null: nothing is held, or the warm-up task is
 * not granted yet): RELEASE_TOP_UP_MS after the grant, which set `warmupUntil` WARMUP_RELEASE_MAX_MS on.
 */
export function toReleaseTopUpAt(warmupUntil: number | null): number | null {
  return warmupUntil === null || warmupUntil <= 0 ? null : warmupUntil - WARMUP_RELEASE_MAX_MS + RELEASE_TOP_UP_MS;
}

/** What every task's request starts with: tools and the response format, then the system prompt. */
export interface SharedPrefix {
  system: string | null;
  tools: readonly unknown[];
  responseFormat: unknown;
}

/** Tokens of the shared prefix, estimated as 4 characters a token (the task's own text comes after it). */
export function estimateSharedPrefixTokens(shared: SharedPrefix): number {
  const chars =
    (shared.system?.length ?? 0) +
    (shared.tools.length > 0 ? JSON.stringify(shared.tools).length : 0) +
    (shared.responseFormat === null || shared.responseFormat === undefined ? 0 : JSON.stringify(shared.responseFormat).length);
  return Math.floor(chars / 4);
}

/** Whether a swarm starts one task first: `auto`, more than one task, and a prefix the upstream caches. */
export function needsWarmup(setting: "auto" | false, sharedTokens: number, tasks: number): boolean {
  return setting === "auto" && tasks > 1 && sharedTokens >= CACHE_MIN_PREFIX_TOKENS;
}

/** The status's `cache`: the share of prompt tokens served from the cache, and what that saved at the cached rate. */
export function toCacheView(byModel: readonly { price: ModelPrice | null; promptTokens: number; cachedTokens: number }[]): {
  hit_ratio: number;
  saved_usd: number;
} {
  let prompt = 0;
  let cached = 0;
  let saved = 0;
  for (const row of byModel) {
    prompt += row.promptTokens;
    cached += Math.min(row.cachedTokens, row.promptTokens);
    if (row.price !== null) saved += (Math.min(row.cachedTokens, row.promptTokens) * Math.max(0, row.price.input - row.price.cached_input)) / 1e6;
  }
  return { hit_ratio: prompt === 0 ? 0 : cached / prompt, saved_usd: saved };
}
