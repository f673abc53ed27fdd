import { describe, expect, it } from "vitest";
import { formatSummary, type SummaryInput } from "./format-summary.ts";

const status = (counts: Partial<SummaryInput["counts"]>): SummaryInput => ({
  tasks: 100,
  cost_usd: 0.000123,
  wall_s: 3.21,
  latency_ms: { p50: 212, p95: 260 },
  counts: { succeeded: 0, failed: 0, cancelled: 0, skipped_budget: 0, skipped: 0, ...counts },
  usage: { total_tokens: 4_800 },
});

describe("formatSummary", () => {
  it.each<[string, Partial<SummaryInput["counts"]>, string]>([
    ["all succeeded", { succeeded: 100 }, "ok=100 err=0"],
    ["failed, cancelled and skipped by the budget are errors", { succeeded: 90, failed: 5, cancelled: 3, skipped_budget: 2 }, "ok=90 err=10"],
    ["skipped by fail fast are errors too", { failed: 20, skipped: 80 }, "ok=0 err=100"],
  ])("%s", (_label, counts, expected) => {
    expect(formatSummary(status(counts))).toBe(`n=100 ${expected} wall=3.21 s throughput=31.2 req/s p50=212 ms p95=260 ms tokens=4800 cost=$0.000123`);
  });
});
