import { describe, expect, it } from "vitest";
import { chargeOfCall, fitsBudget, worstCaseCall } from "./budget.ts";
import type { ErrorClass } from "./error-class.ts";

const price = { input: 1, cached_input: 0.1, output: 10 };

describe("budget maths", () => {
  it("bounds a call by every prompt byte as a token, framing, and the full output", () => {
    // (100 + 16) × $1/MTok + 50 × $10/MTok
    expect(worstCaseCall(100, 50, price)).toEqual({ usd: (116 * 1 + 50 * 10) / 1e6, tokens: 166 });
    expect(worstCaseCall(100, 50, null)).toEqual({ usd: 0, tokens: 166 });
  });

  const worst = { usd: 0.5, tokens: 1_000 };
  const usage = { prompt_tokens: 100, cached_tokens: 40, completion_tokens: 10, reasoning_tokens: 0, total_tokens: 110 };
  it.each<[string, ErrorClass | null, boolean, { usd: number; tokens: number }]>([
    ["a call with usage is charged its real cost", null, true, { usd: (60 * 1 + 40 * 0.1 + 10 * 10) / 1e6, tokens: 110 }],
    ["a success without usage is charged its worst case", null, false, worst],
    ["a 429 bills nothing", "rate_limited", false, { usd: 0, tokens: 0 }],
    ["a 5xx bills nothing", "upstream_error", false, { usd: 0, tokens: 0 }],
    ["a 400 bills nothing", "bad_request", false, { usd: 0, tokens: 0 }],
    ["a timeout may have billed: worst case", "upstream_timeout", false, worst],
    ["a cut stream may have billed: worst case", "truncated_stream", false, worst],
  ])("%s", (_label, errorClass, withUsage, expected) => {
    const charge = chargeOfCall({ usage: withUsage ? usage : null, errorClass }, price, worst);
    expect(charge.tokens).toBe(expected.tokens);
    expect(charge.usd).toBeCloseTo(expected.usd, 12);
  });

  it.each([
    ["fits exactly", { max_usd: 1 }, { usd: 0.5, tokens: 0 }, { usd: 0.5, tokens: 0 }, true],
    ["a cent over", { max_usd: 1 }, { usd: 0.51, tokens: 0 }, { usd: 0.5, tokens: 0 }, false],
    ["tokens only", { max_tokens: 100 }, { usd: 99, tokens: 60 }, { usd: 99, tokens: 40 }, true],
    ["tokens over", { max_tokens: 100 }, { usd: 0, tokens: 61 }, { usd: 0, tokens: 40 }, false],
    ["both, tokens decide", { max_usd: 10, max_tokens: 100 }, { usd: 1, tokens: 90 }, { usd: 1, tokens: 20 }, false],
  ])("%s", (_label, budget, committed, next, fits) => {
    expect(fitsBudget(budget, committed, next)).toBe(fits);
  });
});
