import { describe, expect, it } from "vitest";
import { HEDGE_MIN_SAMPLES, HedgeSpecSchema, mayHedge, toHedgeAfterMs, toHedgeLimit, toMeanLatencyMs } from "./hedge-policy.ts";

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

describe("limits.hedge", () => {
  it.each([
    ["defaults", {}, { after: "p95", max_extra: 0.05 }],
    ["fixed ms", { after: 800 }, { after: 800, max_extra: 0.05 }],
    ["p99 and a tenth", { after: "p99", max_extra: 0.1 }, { after: "p99", max_extra: 0.1 }],
  ])("%s", (_label, input, expected) => {
    expect(HedgeSpecSchema.parse(input)).toEqual(expected);
  });

  it.each([
    ["an unknown percentile", { after: "p42" }, ["after"]],
    ["more than half again", { max_extra: 0.6 }, ["max_extra"]],
    ["a negative share", { max_extra: -0.1 }, ["max_extra"]],
    ["under 10 ms", { after: 5 }, ["after"]],
    ["an unknown field", { after: "p95", extra: 1 }, []],
  ])("refuses %s", (_label, input, path) => {
    const parsed = HedgeSpecSchema.safeParse(input);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(path);
  });
});

describe("the backup's delay", () => {
  const p95 = HedgeSpecSchema.parse({ after: "p95" });
  it.each([
    ["fixed ms need no sample", HedgeSpecSchema.parse({ after: 750 }), { finished: [], running: [] }, 750],
    ["too few finished calls: none yet", p95, { finished: range(HEDGE_MIN_SAMPLES - 1, () => 100), running: range(50, () => 5_000) }, null],
    ["p95 of 100 finished calls 1..100 ms", p95, { finished: range(100, (i) => i + 1), running: [] }, 95],
    [
      // 20 fast calls finished first; 80 still run at 1 s: the fast ones alone would say 20 ms, and
      // the p95 is past 1 s, where nothing has ended yet: until the estimate can say, the running
      // calls count as if they ended now (at most the true p95).
      "calls still running past what has ended: at their elapsed time, until the estimate can say",
      p95,
      { finished: range(20, (i) => i + 1), running: range(80, () => 1_000) },
      1_000,
    ],
    [
      // 100 finished at 1..100 ms and 5 running at 2 s: those 5 are past the p95 whatever they take.
      "calls running longer than the percentile count as longer",
      p95,
      { finished: range(100, (i) => i + 1), running: range(5, () => 2_000) },
      100,
    ],
    [
      // 100 finished at 1..100 ms and 100 started 10 ms ago, counted as ending past 10 ms as the
      // finished ones did: 96 (as if they had ended at 10 ms: 90).
      "calls just started do not pull it down",
      p95,
      { finished: range(100, (i) => i + 1), running: range(100, () => 10) },
      96,
    ],
    ["p50 of 1..100", HedgeSpecSchema.parse({ after: "p50" }), { finished: range(100, (i) => i + 1), running: [] }, 50],
  ])("%s", (_label, spec, sample, expected) => {
    expect(toHedgeAfterMs(spec, sample)).toBe(expected);
  });
});

describe("how many backups", () => {
  it.each([
    [0.05, 1_000, 50],
    [0.05, 10, 0],
    [0.05, 20, 1],
    [0, 1_000, 0],
    [0.5, 3, 1],
    [0.07, 100, 7],
  ])("max_extra %s of %s tasks: %s", (maxExtra, tasks, expected) => {
    expect(toHedgeLimit(HedgeSpecSchema.parse({ max_extra: maxExtra }), tasks)).toBe(expected);
  });
});

describe("may a backup go now", () => {
  // 1,000 tasks waiting × 484 ms / W 100: they go out over the next 4.84 s.
  const body = { limit: 50, sent: 10, waiting: 1_000, window: 100, meanLatencyMs: 484 };
  it.each([
    ["the tail spends the rest", { ...body, sent: 49, waiting: 0, elapsedMs: 1_500 }, { ok: true }],
    ["nothing left", { ...body, sent: 50, waiting: 0, elapsedMs: 9_000 }, { ok: false, reason: "limit" }],
    ["no budget at all", { ...body, limit: 0, sent: 0, waiting: 0, elapsedMs: 9_000 }, { ok: false, reason: "limit" }],
    ["before the tail a straggler that will end before the rest are out waits", { ...body, elapsedMs: 1_500 }, { ok: false, reason: "kept_for_tail" }],
    ["before the tail a straggler that has run as long as the rest will take goes", { ...body, elapsedMs: 4_840 }, { ok: true }],
    ["near the tail (100 waiting: 0.48 s) a 1.5 s straggler goes", { ...body, waiting: 100, elapsedMs: 1_500 }, { ok: true }],
    [
      "no finished call yet: waiting tasks keep the limit for the tail",
      { ...body, meanLatencyMs: null, elapsedMs: 60_000 },
      { ok: false, reason: "kept_for_tail" },
    ],
  ])("%s", (_label, ask, expected) => {
    expect(mayHedge(ask)).toEqual(expected);
  });
});

describe("mean latency", () => {
  it.each([
    [[], null],
    [[100], 100],
    [[100, 200, 600], 300],
  ])("%j → %s", (latencies, expected) => {
    expect(toMeanLatencyMs(latencies)).toBe(expected);
  });
});
