// Deterministic mock text and the token-count approximation (ceil(chars / 4)) used for usage.

import { createHash } from "node:crypto";
import { createPrng } from "./prng.ts";

const WORDS = (
  "alpha beta gamma delta edge swarm agent token merge shard result ledger worker queue batch " +
  "signal vector cache route plan draft review answer summary detail context window latency " +
  "stream chunk model prompt reply mock sample value record index budget limit retry backoff " +
  "quota region cluster node durable object storage binding request response header payload " +
  "schema field number string array boolean"
).split(" ");

export const sha256hex = (s: string): string => createHash("sha256").update(s).digest("hex");

/** Approximate token count: ceil(UTF-16 length / 4). */
export const countTokens = (s: string): number => Math.ceil(s.length / 4);

/** Text of a message `content`: a string, an array of parts (text parts joined), or null. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let out = "";
  for (const part of content) {
    if (typeof part === "string") out += part;
    else if (typeof part === "object" && part !== null) {
      const text = (part as { text?: unknown }).text;
      if (typeof text === "string") out += text;
    }
  }
  return out;
}

export interface PromptMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
}

/** Prompt tokens: per message ceil(chars/4) + 4 (tool_calls counted as JSON), plus tool definitions. */
export function countPromptTokens(messages: readonly PromptMessage[], tools: unknown): number {
  let n = 0;
  for (const m of messages) {
    n += countTokens(contentText(m.content)) + 4;
    if (m.tool_calls !== undefined) n += countTokens(JSON.stringify(m.tool_calls));
  }
  if (Array.isArray(tools) && tools.length > 0) n += countTokens(JSON.stringify(tools));
  return n;
}

/** Cuts `text` to at most `maxTokens` tokens (4 chars each). */
export function clipToTokens(text: string, maxTokens: number | undefined): { text: string; clipped: boolean } {
  if (maxTokens === undefined || countTokens(text) <= maxTokens) return { text, clipped: false };
  return { text: text.slice(0, maxTokens * 4), clipped: true };
}

/** A 32-bit seed from the first 8 hex digits of a hash. */
export const seedOf = (hex: string): number => Number.parseInt(hex.slice(0, 8), 16) >>> 0;

/** `count` deterministic words for a hash. */
export function words(hex: string, count: number): string {
  const prng = createPrng(seedOf(hex));
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(WORDS[Math.floor(prng.next() * WORDS.length)] ?? "mock");
  return out.join(" ");
}

/**
 * The mock reply text: `[mock] reply to <userHash>: <words>.`, 12-31 words chosen by the request
 * hash. With `targetTokens`, words are added until the text has exactly that many tokens.
 */
export function mockReply(requestHash: string, userHash: string, targetTokens?: number): string {
  const head = `[mock] reply to ${userHash}:`;
  if (targetTokens === undefined) return `${head} ${words(requestHash, 12 + (seedOf(requestHash) % 20))}.`;
  const want = Math.max(0, targetTokens) * 4;
  let text = head;
  const prng = createPrng(seedOf(requestHash));
  while (text.length < want) text += ` ${WORDS[Math.floor(prng.next() * WORDS.length)] ?? "mock"}`;
  return text.slice(0, want);
}

/** Splits text into stream pieces of about `size` chars, cutting after spaces where possible. */
export function splitForStream(text: string, size = 16): string[] {
  if (text.length === 0) return [];
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    let j = Math.min(text.length, i + size);
    if (j < text.length) {
      const space = text.indexOf(" ", j);
      if (space !== -1 && space - j < size) j = space + 1;
    }
    out.push(text.slice(i, j));
    i = j;
  }
  return out;
}
