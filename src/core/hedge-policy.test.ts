import { describe, expect, it } from "vitest";
import { HEDGE_MIN_SAMPLES, type HedgeAsk, HedgeSpecSchema, mayHedge, toHedgeAfterMs, toHedgeLimit, toLongCallShare, toMeanLatencyMs } from "./hedge-policy.ts";

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
      // 20 fast calls finished first; 80 still run at 1 s: the fast ones alone would say 20 ms.
      "calls still running count at their elapsed time",
      p95,
      { finished: range(20, (i) => i + 1), running: range(80, () => 1_000) },
      1_000,
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

describe("the window's long share", () => {
  it.each([
    ["no calls", [], 100, 0],
    ["none past the threshold", [100, 200, 300], 300, 0],
    ["one long call holds most of the time", [100, 100, 800], 500, 0.8],
    ["all past it", [600, 700], 500, 1],
  ])("%s", (_label, latencies, afterMs, expected) => {
    expect(toLongCallShare(latencies, afterMs)).toBeCloseTo(expected, 9);
  });
});

describe("may a backup go now", () => {
  const at = (ask: Omit<HedgeAsk, "meanLatencyMs" | "afterMs">): HedgeAsk => ({ meanLatencyMs: 484, afterMs: 1_500, ...ask });
  it.each([
    ["the tail spends the rest", { limit: 50, sent: 49, waiting: 0, window: 100, longShare: 0.25 }, { ok: true }],
    ["nothing left", { limit: 50, sent: 50, waiting: 0, window: 100, longShare: 0.25 }, { ok: false, reason: "limit" }],
    ["before the tail: what the tail will not need (50 − 25)", { limit: 50, sent: 24, waiting: 1_000, window: 100, longShare: 0.25 }, { ok: true }],
    ["before the tail: the tail's 25 are kept", { limit: 50, sent: 25, waiting: 1_000, window: 100, longShare: 0.25 }, { ok: false, reason: "kept_for_tail" }],
    ["a small budget is all the tail's", { limit: 10, sent: 0, waiting: 1_000, window: 100, longShare: 0.25 }, { ok: false, reason: "kept_for_tail" }],
    ["no long calls: nothing kept", { limit: 10, sent: 9, waiting: 1_000, window: 100, longShare: 0 }, { ok: true }],
    ["no budget at all", { limit: 0, sent: 0, waiting: 0, window: 100, longShare: 0 }, { ok: false, reason: "limit" }],
    [
      // 300 waiting × 484 ms / 100 = 1.45 s ≤ 1.5 s: they are all out before a straggler now could end.
      "the waiting tasks all go out within the delay: the tail has begun",
      { limit: 50, sent: 25, waiting: 300, window: 100, longShare: 0.25 },
      { ok: true },
    ],
  ])("%s", (_label, ask, expected) => {
    expect(mayHedge(at(ask))).toEqual(expected);
  });

  it("without a finished call's latency, waiting tasks keep the tail's share", () => {
    expect(mayHedge({ limit: 50, sent: 25, waiting: 1, window: 100, longShare: 0.25, meanLatencyMs: null, afterMs: 1_500 })).toEqual({
      ok: false,
      reason: "kept_for_tail",
    });
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
