import { describe, expect, it } from "vitest";
import { extractStreamUsage, normalizeUsage, type Usage } from "./usage.ts";

const u = (prompt: number, cached: number, completion: number, reasoning: number, total: number): Usage => ({
  prompt_tokens: prompt,
  cached_tokens: cached,
  completion_tokens: completion,
  reasoning_tokens: reasoning,
  total_tokens: total,
});

// Fixtures follow each vendor's documented `usage` shape for /chat/completions.
describe("normalizeUsage: vendor shapes", () => {
  it.each<[string, unknown, Usage]>([
    [
      "OpenAI",
      {
        prompt_tokens: 1_200,
        completion_tokens: 300,
        total_tokens: 1_500,
        prompt_tokens_details: { cached_tokens: 1_024, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 128, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
      u(1_200, 1_024, 300, 128, 1_500),
    ],
    [
      "DeepSeek (reasoner)",
      {
        prompt_tokens: 100,
        completion_tokens: 250,
        total_tokens: 350,
        prompt_tokens_details: { cached_tokens: 64 },
        prompt_cache_hit_tokens: 64,
        prompt_cache_miss_tokens: 36,
        completion_tokens_details: { reasoning_tokens: 200 },
      },
      u(100, 64, 250, 200, 350),
    ],
    [
      "DeepSeek (cache fields only)",
      { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, prompt_cache_hit_tokens: 80, prompt_cache_miss_tokens: 20 },
      u(100, 80, 10, 0, 110),
    ],
    ["Moonshot/Kimi", { prompt_tokens: 500, completion_tokens: 40, total_tokens: 540, cached_tokens: 256 }, u(500, 256, 40, 0, 540)],
    [
      "Anthropic OpenAI-compatible",
      { prompt_tokens: 2_000, completion_tokens: 150, total_tokens: 2_150, prompt_tokens_details: { cached_tokens: 1_800 } },
      u(2_000, 1_800, 150, 0, 2_150),
    ],
    ["Gemini, no thinking", { prompt_tokens: 20, completion_tokens: 198, total_tokens: 218 }, u(20, 0, 198, 0, 218)],
    [
      // thinking tokens appear only in total_tokens: they are output, so they join completion as reasoning
      "Gemini, thinking only in total",
      { prompt_tokens: 20, completion_tokens: 198, total_tokens: 623 },
      u(20, 0, 603, 405, 623),
    ],
    [
      "Gemini, thinking in total and in details",
      { prompt_tokens: 21, completion_tokens: 0, total_tokens: 81, completion_tokens_details: { reasoning_tokens: 60 } },
      u(21, 0, 60, 60, 81),
    ],
    [
      "Gemini, cached",
      { prompt_tokens: 5_000, completion_tokens: 10, total_tokens: 5_010, prompt_tokens_details: { cached_tokens: 4_096 } },
      u(5_000, 4_096, 10, 0, 5_010),
    ],
    [
      "vLLM, details null",
      { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19, prompt_tokens_details: null, completion_tokens_details: null },
      u(12, 0, 7, 0, 19),
    ],
    ["Ollama", { prompt_tokens: 26, completion_tokens: 298, total_tokens: 324 }, u(26, 0, 298, 0, 324)],
  ])("%s", (_vendor, raw, expected) => {
    expect(normalizeUsage(raw)).toEqual(expected);
  });
});

describe("normalizeUsage: totals and invariants", () => {
  it.each<[string, unknown, Usage]>([
    ["no vendor total → computed", { prompt_tokens: 3, completion_tokens: 4 }, u(3, 0, 4, 0, 7)],
    ["vendor total smaller than the parts → computed", { prompt_tokens: 3, completion_tokens: 4, total_tokens: 5 }, u(3, 0, 4, 0, 7)],
    ["vendor total not a number → computed", { prompt_tokens: 3, completion_tokens: 4, total_tokens: "7" }, u(3, 0, 4, 0, 7)],
    ["cached above prompt → clamped", { prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 50 } }, u(10, 10, 1, 0, 11)],
    [
      "reasoning above completion → clamped",
      { prompt_tokens: 10, completion_tokens: 5, completion_tokens_details: { reasoning_tokens: 9 } },
      u(10, 0, 5, 5, 15),
    ],
    ["negative detail → 0", { prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: -1 } }, u(10, 0, 5, 0, 15)],
    ["zeros are real zeros", { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, u(0, 0, 0, 0, 0)],
    ["DeepSeek hit + miss stand in for prompt", { completion_tokens: 5, prompt_cache_hit_tokens: 7, prompt_cache_miss_tokens: 3 }, u(10, 7, 5, 0, 15)],
  ])("%s", (_name, raw, expected) => {
    expect(normalizeUsage(raw)).toEqual(expected);
  });
});

describe("normalizeUsage: missing or invalid → null", () => {
  it.each<[string, unknown]>([
    ["undefined", undefined],
    ["null", null],
    ["a number", 42],
    ["an array", [1, 2]],
    ["empty object", {}],
    ["no completion", { prompt_tokens: 10, total_tokens: 10 }],
    ["no prompt", { completion_tokens: 10, total_tokens: 10 }],
    ["string counts", { prompt_tokens: "10", completion_tokens: "5" }],
    ["negative prompt", { prompt_tokens: -1, completion_tokens: 5 }],
    ["fractional completion", { prompt_tokens: 1, completion_tokens: 2.5 }],
    ["NaN", { prompt_tokens: Number.NaN, completion_tokens: 5 }],
    ["Anthropic native shape (not OpenAI-compatible)", { input_tokens: 10, output_tokens: 5 }],
  ])("%s", (_name, raw) => {
    expect(normalizeUsage(raw)).toBeNull();
  });
});

describe("extractStreamUsage", () => {
  const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
  it.each<[string, unknown, unknown]>([
    ["OpenAI final chunk", { id: "c", object: "chat.completion.chunk", choices: [], usage }, usage],
    ["OpenAI content chunk with usage: null", { choices: [{ index: 0, delta: { content: "hi" } }], usage: null }, undefined],
    ["Moonshot/Kimi choices[0].usage", { choices: [{ index: 0, delta: {}, finish_reason: "stop", usage }] }, usage],
    ["Kimi with usage: null at top level", { usage: null, choices: [{ index: 0, delta: {}, usage }] }, usage],
    ["no usage anywhere", { choices: [{ index: 0, delta: { content: "x" }, finish_reason: null }] }, undefined],
    ["empty choices", { choices: [] }, undefined],
    ["not an object", "data: [DONE]", undefined],
    ["null", null, undefined],
  ])("%s", (_name, chunk, expected) => {
    expect(extractStreamUsage(chunk)).toBe(expected);
  });
});
