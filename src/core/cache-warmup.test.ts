import { describe, expect, it } from "vitest";
import { startConversation } from "./agent-conversation.ts";
import { estimateSharedPrefixTokens, needsWarmup, RELEASE_TOP_UP_MS, toCacheView, toReleaseTopUpAt, WARMUP_RELEASE_MAX_MS } from "./cache-warmup.ts";

describe("estimateSharedPrefixTokens and needsWarmup", () => {
  const tools = [{ type: "function", function: { name: "lint", parameters: { type: "object" } } }];
  it.each<[string, { system: string | null; tools: unknown[]; responseFormat: unknown }, number, boolean]>([
    ["no system prompt", { system: null, tools: [], responseFormat: null }, 100, false],
    ["a short system prompt", { system: "x".repeat(4_000), tools: [], responseFormat: null }, 100, false],
    ["an 8,000-character system prompt", { system: "x".repeat(8_000), tools: [], responseFormat: null }, 100, true],
    ["exactly 1,024 tokens", { system: "x".repeat(4_096), tools: [], responseFormat: null }, 100, true],
    ["tools and a schema make up the rest", { system: "x".repeat(4_000), tools, responseFormat: { type: "json_schema", schema: { a: 1 } } }, 100, true],
    ["one task: nothing to share", { system: "x".repeat(8_000), tools: [], responseFormat: null }, 1, false],
  ])("%s", (_label, shared, tasks, expected) => {
    expect(needsWarmup("auto", estimateSharedPrefixTokens(shared), tasks)).toBe(expected);
    expect(needsWarmup(false, estimateSharedPrefixTokens(shared), tasks)).toBe(false);
  });
});

describe("toCacheView", () => {
  it("is the cached share of prompt tokens, and the cached tokens priced at input minus cached input", () => {
    const price = { input: 2, cached_input: 0.5, output: 8 };
    expect(
      toCacheView([
        { price, promptTokens: 1_000_000, cachedTokens: 900_000 },
        { price: null, promptTokens: 1_000_000, cachedTokens: 100_000 },
      ]),
    ).toEqual({ hit_ratio: 0.5, saved_usd: 1.35 });
    expect(toCacheView([])).toEqual({ hit_ratio: 0, saved_usd: 0 });
  });
});

describe("prefix stability", () => {
  it("two tasks' conversations share every byte up to the first task's own text: system first, the task after", () => {
    const system = "You review code. ".repeat(500);
    const a = JSON.stringify(startConversation(system, "Review file-1.ts").messages);
    const b = JSON.stringify(startConversation(system, "Review file-2.ts").messages);
    let shared = 0;
    while (shared < a.length && a[shared] === b[shared]) shared += 1;
    expect(a.slice(0, shared)).toContain(system);
    expect(a.slice(shared)).toBe('1.ts"}]');
  });
});

describe("toReleaseTopUpAt", () => {
  it.each([
    // warmup_until → when the lanes are sized for the release
    [null, null],
    [0, null],
    [10_000 + WARMUP_RELEASE_MAX_MS, 10_000 + RELEASE_TOP_UP_MS],
  ])("a hold until %j tops its lanes up at %j", (warmupUntil, at) => {
    expect(toReleaseTopUpAt(warmupUntil)).toBe(at);
  });
});
