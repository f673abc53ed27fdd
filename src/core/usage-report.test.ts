import { describe, expect, it } from "vitest";
import { toUsageFigures, toUsageReport, type UsageAggregateRow } from "./usage-report.ts";

const row = (overrides: Partial<UsageAggregateRow>): UsageAggregateRow => ({
  key: "mock-1",
  calls: 4,
  errors: 1,
  prompt_tokens: 300,
  cached_tokens: 100,
  completion_tokens: 50,
  reasoning_tokens: 10,
  total_tokens: 350,
  missing_usage_calls: 1,
  unpriced_calls: 0,
  estimated_calls: 0,
  cost_pico: 12_345_678,
  p50_latency_ms: 210,
  ...overrides,
});

describe("toUsageFigures", () => {
  it.each<[string, Partial<UsageAggregateRow>, Partial<ReturnType<typeof toUsageFigures>>]>([
    ["error rate and cost in USD", {}, { error_rate: 0.25, cost_usd: 12_345_678 / 1e12, missing_usage_calls: 1, p50_latency_ms: 210 }],
    ["no errors", { errors: 0 }, { error_rate: 0 }],
    ["every call failed", { errors: 4 }, { error_rate: 1 }],
    // Every call without usage: the sums stay null (not 0) and the count says why.
    [
      "no usage at all",
      {
        prompt_tokens: null,
        cached_tokens: null,
        completion_tokens: null,
        reasoning_tokens: null,
        total_tokens: null,
        cost_pico: null,
        missing_usage_calls: 4,
      },
      { prompt_tokens: null, total_tokens: null, cost_usd: null, missing_usage_calls: 4, calls: 4 },
    ],
    ["usage but no price", { cost_pico: null, unpriced_calls: 3 }, { cost_usd: null, unpriced_calls: 3, prompt_tokens: 300 }],
    [
      "no calls (an empty range's totals)",
      { key: null, calls: 0, errors: 0, p50_latency_ms: null, prompt_tokens: null, cost_pico: null, missing_usage_calls: 0, estimated_calls: 0 },
      { calls: 0, error_rate: null, p50_latency_ms: null, cost_usd: null },
    ],
  ])("%s", (_case, overrides, expected) => {
    expect(toUsageFigures(row(overrides))).toMatchObject(expected);
  });

  it("sums costs exactly: picodollars, not a float sum", () => {
    // 0.1 + 0.2 as doubles is 0.30000000000000004; summed as picodollars it is 0.3.
    expect(toUsageFigures(row({ cost_pico: 100_000_000_000 + 200_000_000_000 })).cost_usd).toBe(0.3);
  });
});

describe("toUsageReport", () => {
  const query = { from: Date.parse("2026-06-01T00:00:00Z"), to: Date.parse("2026-06-08T00:00:00Z"), groupBy: "day" as const };

  it("keeps the groups' order, ISO range, totals and the scan cap", () => {
    const report = toUsageReport(
      query,
      { groups: [row({ key: "2026-06-01", calls: 1 }), row({ key: "2026-06-02", calls: 3 })], totals: row({ key: null, calls: 4 }) },
      1_000,
    );
    expect(report.from).toBe("2026-06-01T00:00:00.000Z");
    expect(report.to).toBe("2026-06-08T00:00:00.000Z");
    expect(report.group_by).toBe("day");
    expect(report.rows.map((r) => [r.key, r.calls])).toEqual([
      ["2026-06-01", 1],
      ["2026-06-02", 3],
    ]);
    expect(report.totals.calls).toBe(4);
    expect(report.totals).not.toHaveProperty("key");
    expect(report.scan).toEqual({ max_calls: 1_000, capped: false });
  });

  it("says capped when the scan reached its cap", () => {
    const report = toUsageReport(query, { groups: [], totals: row({ key: null, calls: 4 }) }, 4);
    expect(report.scan).toEqual({ max_calls: 4, capped: true });
  });
});
