import { describe, expect, it } from "vitest";
import { costOfUsage, DEFAULT_PRICES, parsePriceTable, resolvePrice, type ModelPrice, type PriceTable } from "./pricing.ts";
import type { Usage } from "./usage.ts";

describe("DEFAULT_PRICES", () => {
  it.each<[string, ModelPrice]>([
    ["gpt-4.1", { input: 2, cached_input: 0.5, output: 8 }],
    ["claude-sonnet-4.5", { input: 3, cached_input: 0.3, output: 15 }],
    ["gemini-2.5-flash", { input: 0.3, cached_input: 0.03, output: 2.5 }],
    ["deepseek-v3.2", { input: 0.28, cached_input: 0.028, output: 0.42 }],
    ["kimi-k2.5", { input: 0.15, cached_input: 0.015, output: 0.6 }],
    ["mock-1", { input: 0.1, cached_input: 0.01, output: 0.4 }],
  ])("%s", (model, price) => {
    expect(DEFAULT_PRICES[model]).toEqual(price);
  });

  it("holds exactly those six models", () => {
    expect(Object.keys(DEFAULT_PRICES).sort()).toEqual(["claude-sonnet-4.5", "deepseek-v3.2", "gemini-2.5-flash", "gpt-4.1", "kimi-k2.5", "mock-1"].sort());
  });
});

describe("parsePriceTable", () => {
  it.each([[undefined], [""], ["   "]])("%j gives the defaults", (json) => {
    expect(parsePriceTable(json)).toEqual({ ok: true, value: DEFAULT_PRICES });
  });

  it.each<[string, string, string, ModelPrice]>([
    ["partial override of a known model", '{"gpt-4.1": {"output": 9}}', "gpt-4.1", { input: 2, cached_input: 0.5, output: 9 }],
    ["full override", '{"mock-1": {"input": 1, "cached_input": 0, "output": 2}}', "mock-1", { input: 1, cached_input: 0, output: 2 }],
    ["new model", '{"llama-3.3-70b": {"input": 0.6, "cached_input": 0.6, "output": 0.6}}', "llama-3.3-70b", { input: 0.6, cached_input: 0.6, output: 0.6 }],
    ["untouched default stays", '{"gpt-4.1": {"output": 9}}', "kimi-k2.5", { input: 0.15, cached_input: 0.015, output: 0.6 }],
  ])("%s", (_name, json, model, expected) => {
    const r = parsePriceTable(json);
    expect(r.ok && r.value[model]).toEqual(expected);
  });

  it("does not change DEFAULT_PRICES", () => {
    parsePriceTable('{"gpt-4.1": {"output": 99}}');
    expect(DEFAULT_PRICES["gpt-4.1"]?.output).toBe(8);
  });

  it("keeps a model named __proto__ as a plain key", () => {
    const r = parsePriceTable('{"__proto__": {"input": 1, "cached_input": 1, "output": 1}}');
    expect(r.ok && Object.hasOwn(r.value, "__proto__")).toBe(true);
    expect(r.ok && Object.getPrototypeOf(r.value)).toBe(Object.prototype);
  });

  it.each([
    ["{not json", /^MODEL_PRICES is not valid JSON/],
    ["[1,2]", /^MODEL_PRICES must be a JSON object/],
    ["null", /^MODEL_PRICES must be a JSON object/],
    ['{"gpt-4.1": 5}', /model "gpt-4.1" must map to an object/],
    ['{"new-model": {"input": 1, "output": 2}}', /model "new-model" field "cached_input" is missing/],
    ['{"gpt-4.1": {"output": -1}}', /model "gpt-4.1" field "output" must be a non-negative number/],
    ['{"gpt-4.1": {"input": "2"}}', /model "gpt-4.1" field "input" must be a non-negative number/],
    ['{"gpt-4.1": {"outptu": 2}}', /model "gpt-4.1" field "outptu" is not a price field/],
    ['{"": {"input": 1, "cached_input": 1, "output": 1}}', /model names must not be empty/],
  ])("%s → error", (json, message) => {
    const r = parsePriceTable(json);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(message);
  });
});

describe("resolvePrice", () => {
  const table: PriceTable = {
    ...DEFAULT_PRICES,
    "gpt-4.1-mini": { input: 0.4, cached_input: 0.1, output: 1.6 },
  };
  it.each<[string, string | null]>([
    ["gpt-4.1", "gpt-4.1"],
    ["gpt-4.1-2025-04-14", "gpt-4.1"],
    ["gpt-4.1-mini", "gpt-4.1-mini"],
    ["gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"], // longest prefix wins
    ["claude-sonnet-4.5@20250929", "claude-sonnet-4.5"],
    ["gpt-4.10", null], // prefix not followed by - or @
    ["gpt-4", null],
    ["openai/gpt-4.1", null],
    ["constructor", null], // never an inherited property
    ["", null],
  ])("%s → %s", (model, key) => {
    expect(resolvePrice(table, model)).toBe(key === null ? null : table[key]);
  });
});

describe("costOfUsage", () => {
  const usage = (prompt: number, cached: number, completion: number): Usage => ({
    prompt_tokens: prompt,
    cached_tokens: cached,
    completion_tokens: completion,
    reasoning_tokens: 0,
    total_tokens: prompt + completion,
  });
  const p = (model: string): ModelPrice => {
    const price = DEFAULT_PRICES[model];
    if (price === undefined) throw new Error(model);
    return price;
  };

  it.each<[string, Usage, string, number]>([
    ["nothing", usage(0, 0, 0), "gpt-4.1", 0],
    ["1M input tokens", usage(1_000_000, 0, 0), "gpt-4.1", 2],
    ["1M output tokens", usage(0, 0, 1_000_000), "claude-sonnet-4.5", 15],
    ["1M cached tokens billed once, at the cached price", usage(1_000_000, 1_000_000, 0), "gpt-4.1", 0.5],
    ["mixed", usage(1_000, 200, 500), "gpt-4.1", 0.0057], // 800×2 + 200×0.5 + 500×8 = 5700 µ$
    ["one token at 0.028/MTok", usage(1, 1, 0), "deepseek-v3.2", 0.000000028],
    ["0.1 + 0.2 style sums stay exact", usage(1, 0, 1), "mock-1", 0.0000005],
    ["deepseek mixed", usage(123_457, 100_000, 9_876), "deepseek-v3.2", 0.01351588], // 23457×0.28 + 100000×0.028 + 9876×0.42 = 13515.88 µ$
    ["kimi", usage(3, 0, 7), "kimi-k2.5", 0.00000465],
    ["gemini", usage(1_234, 0, 567), "gemini-2.5-flash", 0.0017877], // 1234×0.3 + 567×2.5 = 1787.7 µ$
    ["cached above prompt is clamped", usage(10, 50, 0), "gpt-4.1", 0.000005],
  ])("%s", (_name, u, model, expected) => {
    expect(costOfUsage(u, p(model))).toBe(expected);
  });
});
