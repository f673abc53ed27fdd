import { describe, expect, it } from "vitest";
import { estimateCalls, estimatePromptTokens, estimateSwarm, utf8Length, type EstimateInput } from "./estimate-swarm.ts";
import { parseSwarmSpec } from "./parse-swarm-spec.ts";
import { DEFAULT_PRICES, parsePriceTable } from "./pricing.ts";

const usd = (pico: number) => pico / 1e12;

// The hand-computed swarm used throughout: ceil(chars / 4) + 4 per message.
const SYSTEM = "You review code."; // 16 chars → 4 + 4 = 8 tokens
const PROMPTS = ["Audit auth.py.", "Audit db.py, then api.py."]; // 14 chars → 4 + 4; 25 chars → 7 + 4
// Per call: 8 + 8 = 16 and 8 + 11 = 19 prompt tokens; 35 per job.

const input = (overrides: Partial<EstimateInput> = {}): EstimateInput => ({
  system: SYSTEM,
  prompts: PROMPTS,
  mix: [{ model: "mock-1", weight: 1 }],
  fallback: [],
  maxOutputTokens: 100,
  maxAttempts: 3,
  callsPerAttempt: 1,
  budget: null,
  prices: DEFAULT_PRICES,
  projection: null,
  ...overrides,
});

describe("estimatePromptTokens", () => {
  it("has the lengths the hand computation assumes", () => {
    expect([SYSTEM.length, ...PROMPTS.map((p) => p.length)]).toEqual([16, 14, 25]);
  });

  it.each<[string | null, string, number]>([
    [null, "abcd", 5],
    [null, "abcde", 6],
    ["", "abcd", 9], // an empty system prompt is still a message
    [SYSTEM, PROMPTS[0] ?? "", 16],
    [SYSTEM, PROMPTS[1] ?? "", 19],
    [null, "x".repeat(4_000), 1_004],
  ])("system %j, prompt %j → %d", (system, prompt, expected) => {
    expect(estimatePromptTokens(system, prompt)).toBe(expected);
  });
});

describe("utf8Length", () => {
  it.each<[string, number]>([
    ["", 0],
    ["abc", 3],
    ["é", 2],
    ["€", 3],
    ["😀", 4],
    ["\uD800", 3], // a lone surrogate is sent as U+FFFD
    ["a€😀", 8],
  ])("%j → %d bytes", (text, bytes) => {
    expect(utf8Length(text)).toBe(bytes);
  });
});

describe("estimateCalls: one model", () => {
  const estimate = estimateCalls(input());

  it("counts calls and tokens from min (1 call, 1-token answers) to max (3 attempts, 100-token answers)", () => {
    expect(estimate.tasks).toBe(2);
    expect(estimate.calls).toEqual({ min: 2, max: 6 });
    expect(estimate.tokens).toEqual({
      prompt: { min: 35, max: 105 },
      completion: { min: 2, max: 600 },
      total: { min: 37, max: 705 },
    });
  });

  it("prices them on mock-1 ($0.1 in, $0.4 out per MTok) exactly", () => {
    // min: 35 × 100,000 + 2 × 400,000 picodollars; max: 105 × 100,000 + 600 × 400,000.
    expect(estimate.cost_usd).toEqual({ min: usd(4_300_000), max: usd(250_500_000) });
    expect(estimate.by_model).toEqual([
      { model: "mock-1", weight: 1, share: 1, price: DEFAULT_PRICES["mock-1"], cost_usd: { min: usd(4_300_000), max: usd(250_500_000) } },
    ]);
  });

  it("compares every priced model, cheapest worst case first", () => {
    expect(estimate.compare_models.map((m) => [m.model, m.cost_usd.max])).toEqual([
      ["mock-1", usd(250_500_000)],
      ["deepseek-v3.2", usd(105 * 280_000 + 600 * 420_000)],
      ["kimi-k2.5", usd(105 * 150_000 + 600 * 600_000)],
      ["gemini-2.5-flash", usd(105 * 300_000 + 600 * 2_500_000)],
      ["gpt-4.1", usd(105 * 2_000_000 + 600 * 8_000_000)],
      ["claude-sonnet-4.5", usd(105 * 3_000_000 + 600 * 15_000_000)],
    ]);
    expect(estimate.compare_models[0]?.cost_usd.min).toBe(usd(4_300_000));
    expect(estimate.compare_models[0]).not.toHaveProperty("monthly_cost_usd");
  });

  it("states its assumptions and has no projection or budget unless asked", () => {
    expect(estimate.assumptions.join("\n")).toMatch(/ceil\(characters \/ 4\) \+ 4 per message/);
    expect(estimate.assumptions.join("\n")).toMatch(/all 3 attempts.*100 tokens/);
    expect(estimate).not.toHaveProperty("projection");
    expect(estimate).not.toHaveProperty("budget");
  });
});

describe("estimateCalls: a weighted mix", () => {
  // deepseek-v3.2 ($0.28 / $0.42) weight 3, kimi-k2.5 ($0.15 / $0.6) weight 1.
  const estimate = estimateCalls(
    input({
      mix: [
        { model: "deepseek-v3.2", weight: 3 },
        { model: "kimi-k2.5", weight: 1 },
      ],
    }),
  );

  it("prices each model's share of the tasks and sums them", () => {
    const deepseek = { min: (35 * 280_000 + 2 * 420_000) * 0.75, max: (105 * 280_000 + 600 * 420_000) * 0.75 };
    const kimi = { min: (35 * 150_000 + 2 * 600_000) * 0.25, max: (105 * 150_000 + 600 * 600_000) * 0.25 };
    expect([deepseek, kimi]).toEqual([
      { min: 7_980_000, max: 211_050_000 },
      { min: 1_612_500, max: 93_937_500 },
    ]);
    expect(estimate.by_model.map((m) => [m.model, m.share, m.cost_usd])).toEqual([
      ["deepseek-v3.2", 0.75, { min: usd(7_980_000), max: usd(211_050_000) }],
      ["kimi-k2.5", 0.25, { min: usd(1_612_500), max: usd(93_937_500) }],
    ]);
    expect(estimate.cost_usd).toEqual({ min: usd(9_592_500), max: usd(304_987_500) });
    // Tokens and calls do not depend on the models.
    expect(estimate.tokens.total).toEqual({ min: 37, max: 705 });
    expect(estimate.assumptions.join("\n")).toMatch(/shares are expected values/);
  });

  it("projects a month per model and for the mix", () => {
    const projected = estimateCalls(
      input({
        mix: [
          { model: "deepseek-v3.2", weight: 3 },
          { model: "kimi-k2.5", weight: 1 },
        ],
        projection: { jobs_per_day: 24, days_per_month: 30 },
      }),
    );
    expect(projected.projection).toEqual({
      jobs_per_day: 24,
      days_per_month: 30,
      jobs_per_month: 720,
      tokens_per_month: { min: 37 * 720, max: 705 * 720 },
      monthly_cost_usd: { min: usd(9_592_500 * 720), max: usd(304_987_500 * 720) },
      by_model: [
        { model: "deepseek-v3.2", monthly_cost_usd: { min: usd(7_980_000 * 720), max: usd(211_050_000 * 720) } },
        { model: "kimi-k2.5", monthly_cost_usd: { min: usd(1_612_500 * 720), max: usd(93_937_500 * 720) } },
      ],
    });
    expect(projected.compare_models.find((m) => m.model === "mock-1")?.monthly_cost_usd).toEqual({ min: usd(4_300_000 * 720), max: usd(250_500_000 * 720) });
  });

  it("accepts a fractional jobs_per_day (every other day)", () => {
    const projected = estimateCalls(input({ projection: { jobs_per_day: 0.5, days_per_month: 30 } }));
    expect(projected.projection?.jobs_per_month).toBe(15);
    expect(projected.projection?.monthly_cost_usd).toEqual({ min: usd(4_300_000 * 15), max: usd(250_500_000 * 15) });
  });
});

describe("estimateCalls: an unpriced model", () => {
  it("leaves its cost null, and the swarm's and the month's, and says so", () => {
    const estimate = estimateCalls(
      input({
        mix: [
          { model: "mock-1", weight: 1 },
          { model: "in-house-llm", weight: 1 },
        ],
        projection: { jobs_per_day: 1, days_per_month: 30 },
      }),
    );
    expect(estimate.cost_usd).toBeNull();
    expect(estimate.by_model).toEqual([
      { model: "mock-1", weight: 1, share: 0.5, price: DEFAULT_PRICES["mock-1"], cost_usd: { min: usd(2_150_000), max: usd(125_250_000) } },
      { model: "in-house-llm", weight: 1, share: 0.5, price: null, cost_usd: null },
    ]);
    expect(estimate.projection?.monthly_cost_usd).toBeNull();
    expect(estimate.projection?.by_model[1]).toEqual({ model: "in-house-llm", monthly_cost_usd: null });
    expect(estimate.assumptions.some((a) => a.includes('"in-house-llm" has no price'))).toBe(true);
    expect(estimate.compare_models.map((m) => m.model)).not.toContain("in-house-llm");
  });

  it("prices a dated model id by its table prefix", () => {
    const estimate = estimateCalls(input({ mix: [{ model: "gpt-4.1-2025-04-14", weight: 1 }] }));
    expect(estimate.cost_usd?.min).toBe(usd(35 * 2_000_000 + 2 * 8_000_000));
  });

  it("uses MODEL_PRICES overrides and models it adds", () => {
    const prices = parsePriceTable('{"mock-1": {"output": 1}, "in-house-llm": {"input": 1, "cached_input": 0, "output": 2}}');
    if (!prices.ok) throw new Error(prices.error);
    const estimate = estimateCalls(input({ prices: prices.value, mix: [{ model: "in-house-llm", weight: 1 }] }));
    expect(estimate.cost_usd).toEqual({ min: usd(35 * 1_000_000 + 2 * 2_000_000), max: usd(105 * 1_000_000 + 600 * 2_000_000) });
    expect(estimate.compare_models.find((m) => m.model === "mock-1")?.cost_usd.max).toBe(usd(105 * 100_000 + 600 * 1_000_000));
  });
});

describe("estimateCalls: budget verdict", () => {
  // The SwarmRoom reserves per call: (prompt bytes + system bytes + 16) + 100 output tokens.
  // Calls: 14 + 16 + 16 + 100 = 146 and 25 + 16 + 16 + 100 = 157 tokens; × 3 attempts = 909.
  // On mock-1: (46 × 100,000 + 100 × 400,000) + (57 × 100,000 + 100 × 400,000) = 90,300,000 pico; × 3.
  it.each<[string, EstimateInput["budget"], string[], "always" | "maybe" | "unlikely"]>([
    ["tokens: the reservation bound fits", { max_tokens: 909 }, [], "always"],
    ["tokens: one short of the bound", { max_tokens: 908 }, [], "maybe"],
    ["tokens: exactly the min estimate", { max_tokens: 37 }, [], "maybe"],
    ["tokens: below the min estimate", { max_tokens: 36 }, [], "unlikely"],
    ["usd: the reservation bound fits", { max_usd: 0.0002709 }, [], "always"],
    ["usd: just under the bound", { max_usd: 0.0002708 }, [], "maybe"],
    ["usd: below the min cost", { max_usd: 0.000004 }, [], "unlikely"],
    ["usd: a dearer fallback may take the retries", { max_usd: 0.0002709 }, ["gpt-4.1"], "maybe"],
    ["both: one maybe makes maybe", { max_usd: 1, max_tokens: 908 }, [], "maybe"],
    ["both: one unlikely makes unlikely", { max_usd: 1, max_tokens: 36 }, [], "unlikely"],
    ["both fit", { max_usd: 1, max_tokens: 10_000 }, [], "always"],
  ])("%s → %s", (_case, budget, fallback, fits) => {
    const estimate = estimateCalls(input({ budget, fallback }));
    expect(estimate.budget).toEqual({ ...budget, fits });
  });

  it("cannot promise a USD budget for an unpriced model", () => {
    const estimate = estimateCalls(input({ budget: { max_usd: 1_000 }, mix: [{ model: "in-house-llm", weight: 1 }] }));
    expect(estimate.budget?.fits).toBe("maybe");
  });
});

describe("estimateSwarm (from a validated spec)", () => {
  it("reads system, tasks, limits and a mix (duplicates merged) from the spec", () => {
    const planned = parseSwarmSpec({
      name: "mix",
      system: SYSTEM,
      model: [
        { model: "deepseek-v3.2", weight: 2 },
        { model: "kimi-k2.5", weight: 1 },
        { model: "deepseek-v3.2", weight: 1 },
      ],
      fallback: ["gpt-4.1"],
      tasks: PROMPTS.map((prompt) => ({ prompt })),
      limits: { max_output_tokens: 100, max_attempts: 3 },
    });
    if (!planned.ok) throw new Error(JSON.stringify(planned.error));
    const estimate = estimateSwarm(planned.value, DEFAULT_PRICES, null);
    expect(estimate.by_model.map((m) => [m.model, m.weight, m.share])).toEqual([
      ["deepseek-v3.2", 3, 0.75],
      ["kimi-k2.5", 1, 0.25],
    ]);
    expect(estimate.cost_usd).toEqual({ min: usd(9_592_500), max: usd(304_987_500) });
    expect(estimate.assumptions.join("\n")).toMatch(/fall back to gpt-4\.1/);
  });

  it("uses the spec's default limits (1,024 output tokens, 4 attempts) and no system message", () => {
    const planned = parseSwarmSpec({ name: "defaults", model: "mock-1", tasks: [{ prompt: "abcd" }] });
    if (!planned.ok) throw new Error(JSON.stringify(planned.error));
    const estimate = estimateSwarm(planned.value, DEFAULT_PRICES, null);
    expect(estimate.calls).toEqual({ min: 1, max: 4 });
    expect(estimate.tokens).toEqual({ prompt: { min: 5, max: 20 }, completion: { min: 1, max: 4_096 }, total: { min: 6, max: 4_116 } });
  });

  it("an agent swarm's max counts every turn, each re-sending the conversation with earlier answers and tool results at their limits", () => {
    const estimate = estimateCalls(input({ callsPerAttempt: 3, maxAttempts: 1 }));
    // 2 tasks × 1 attempt × 3 calls.
    expect(estimate.calls).toEqual({ min: 2, max: 6 });
    // Per task: 3 × its prompt + growth × (0 + 1 + 2), growth = 100 output + 8,000 (32,000-char tool result / 4).
    expect(estimate.tokens.prompt).toEqual({ min: 35, max: 35 * 3 + 2 * 8_100 * 3 });
    expect(estimate.tokens.completion.max).toBe(6 * 100);
    expect(estimate.assumptions.some((a) => a.includes("up to 3 model calls"))).toBe(true);
  });
});
