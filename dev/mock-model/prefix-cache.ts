// The mock's prompt-prefix cache, modelled on OpenAI's (platform.openai.com/docs/guides/prompt-caching):
// a prompt of at least 1,024 tokens is cached in blocks — its first 1,024 tokens, then every 128
// more — and a later request is billed `cached_tokens` for the longest block-aligned prefix it
// shares with one the cache holds. A prefix is held only once a request with it was processed: after
// its prefill, when its first byte (a stream's headers) goes out, never when it was received — so
// 100 requests sent at once all miss. Entries last `ttlMs` after their last use (OpenAI: 5–10 min
// of inactivity). DeepSeek and Kimi cache the same way with other block sizes; one model is enough.
import { createHash, type Hash } from "node:crypto";

/** A prompt cut into its cacheable prefixes: the hash of each block-aligned prefix and its length in tokens. */
export interface PrefixBlocks {
  /** Hashes of the prefixes of `tokens[i]` tokens each, shortest first. */
  hashes: string[];
  tokens: number[];
}

export interface PrefixCacheOptions {
  /** Shortest prompt that is cached at all, in tokens (OpenAI: 1,024). */
  minTokens?: number;
  /** Cached prefixes grow by this many tokens (OpenAI: 128). */
  incrementTokens?: number;
  /** A prefix unused this long is forgotten. */
  ttlMs?: number;
  /** At most this many prefixes are kept (the oldest used go first). */
  maxEntries?: number;
}

/** OpenAI caches prompts of at least this many tokens. */
export const PREFIX_MIN_TOKENS = 1_024;

/** The mock counts a token as 4 characters (text.ts countTokens). */
const CHARS_PER_TOKEN = 4;

/**
 * The text a provider caches, in the order it sees it: tool definitions and the response format
 * (both sit before the messages in the model's prompt), then each message's role, content and tool
 * calls. Any change in it — a reordered tool, a per-task word early on — ends the shared prefix there.
 */
export function toCacheText(request: {
  messages: readonly { role: string; content?: unknown; tool_calls?: unknown }[];
  raw_tools: unknown;
  response_format?: unknown;
}): string {
  const parts: string[] = [];
  if (Array.isArray(request.raw_tools) && request.raw_tools.length > 0) parts.push(JSON.stringify(request.raw_tools));
  if (request.response_format !== undefined && request.response_format !== null) parts.push(JSON.stringify(request.response_format));
  for (const m of request.messages) parts.push(JSON.stringify([m.role, m.content ?? null, m.tool_calls ?? null]));
  return parts.join("\n");
}

/** The cacheable prefixes of `text`: none under `minTokens`, else one per block boundary it reaches. */
export function toPrefixBlocks(text: string, options: Pick<PrefixCacheOptions, "minTokens" | "incrementTokens"> = {}): PrefixBlocks {
  const minTokens = options.minTokens ?? PREFIX_MIN_TOKENS;
  const increment = options.incrementTokens ?? 128;
  const blocks: PrefixBlocks = { hashes: [], tokens: [] };
  const total = Math.floor(text.length / CHARS_PER_TOKEN);
  if (total < minTokens) return blocks;
  // One running hash, copied at each boundary: linear in the prompt, however many blocks it has.
  const hash: Hash = createHash("sha256");
  let hashedChars = 0;
  for (let tokens = minTokens; tokens <= total; tokens += increment) {
    const end = tokens * CHARS_PER_TOKEN;
    hash.update(text.slice(hashedChars, end));
    hashedChars = end;
    blocks.hashes.push(hash.copy().digest("hex"));
    blocks.tokens.push(tokens);
  }
  return blocks;
}

/**
 * How much sooner a call's headers and end come when the cache holds `cachedTokens` of its prompt:
 * the providers skip a cached prefix's prefill, so the time to the first token falls with the cached
 * share (OpenAI: "can reduce time-to-first-token latency by up to 80%", cookbook Prompt_Caching_201;
 * Anthropic: a 100,000-token cached prompt from 11.5 s to 2.4 s, anthropic.com/news/prompt-caching;
 * Cloudflare Workers AI: "the model skips prefill for the cached portion",
 * developers.cloudflare.com/workers-ai/features/prompt-caching). The prefill is part of the time to
 * first byte, so no more than `ttfbMs` is skipped: with no ttfb there is no prefill to skip.
 */
export function toPrefillSkippedMs(cachedTokens: number, prefillMsPer1kTokens: number, ttfbMs: number): number {
  return Math.max(0, Math.min(ttfbMs, Math.round((prefillMsPer1kTokens * cachedTokens) / 1_000)));
}

export class PrefixCache {
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  /** Prefix hash → when it was last used; a Map keeps the order of last use (re-inserted on use). */
  private readonly entries = new Map<string, number>();

  constructor(options: PrefixCacheOptions = {}) {
    this.ttlMs = options.ttlMs ?? 300_000;
    this.maxEntries = options.maxEntries ?? 100_000;
  }

  /** Tokens of the longest prefix of `blocks` the cache holds now (0: a miss). A hit refreshes it. */
  lookup(blocks: PrefixBlocks, now: number): number {
    for (let i = blocks.hashes.length - 1; i >= 0; i -= 1) {
      const hash = blocks.hashes[i] ?? "";
      const usedAt = this.entries.get(hash);
      if (usedAt === undefined) continue;
      if (now - usedAt > this.ttlMs) {
        this.entries.delete(hash);
        continue;
      }
      this.touch(hash, now);
      return blocks.tokens[i] ?? 0;
    }
    return 0;
  }

  /** A request with these prefixes was processed (its prefill is done): each is warm from now on. */
  store(blocks: PrefixBlocks, now: number): void {
    for (const hash of blocks.hashes) this.touch(hash, now);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  /** Prefixes held (expired ones included until looked up). */
  size(): number {
    return this.entries.size;
  }

  private touch(hash: string, now: number): void {
    this.entries.delete(hash);
    this.entries.set(hash, now);
  }
}
