import { describe, expect, it } from "vitest";
import { areCallsEven, EVEN_CALLS_MIN_SAMPLES, freesSlot, STANDBY_MAX, standbyPastRoom, standbyShare, standbyTarget, tailStandbyRoom } from "./standby.ts";
import type { TaskOutcome } from "./swarm-contract.ts";

describe("standby target", () => {
  it.each([
    ["first pull (no timing): a wave of its concurrency, capped", { concurrency: 128, running: 0, latencyMs: null, refillMs: null }, 64],
    ["first pull, small lane: its concurrency", { concurrency: 3, running: 0, latencyMs: null, refillMs: null }, 3],
    ["40 running × 100 ms, a 60 ms refill: 40/100 × 60 × 2", { concurrency: 128, running: 40, latencyMs: 100, refillMs: 60 }, 48],
    ["100 × 200 ms, 40 ms refill: 40 by rate, but half the running", { concurrency: 128, running: 100, latencyMs: 200, refillMs: 40 }, 50],
    ["slow calls end few at a time: half the running", { concurrency: 128, running: 10, latencyMs: 30_000, refillMs: 20 }, 5],
    ["one slow call: at least 1", { concurrency: 128, running: 1, latencyMs: 30_000, refillMs: 20 }, 1],
    ["nothing running: none (nothing will end to make room)", { concurrency: 128, running: 0, latencyMs: 200, refillMs: 40 }, 0],
    ["fast calls, slow refill: capped at STANDBY_MAX", { concurrency: 1_000, running: 1_000, latencyMs: 50, refillMs: 200 }, STANDBY_MAX],
    ["capped at the concurrency", { concurrency: 4, running: 4, latencyMs: 10, refillMs: 100 }, 4],
    ["no concurrency: none", { concurrency: 0, running: 0, latencyMs: null, refillMs: null }, 0],
    [
      "a header-bound lane of 6 waiting 1 s for company: 6/666 × 1030 × 2, within three times its slots",
      { concurrency: 128, slots: 6, running: 6, latencyMs: 666, refillMs: 1_030 },
      18,
    ],
    [
      "a header-bound lane of 6, 200 ms calls, a 410 ms refill: 6/200 × 410 × 2, three times its slots",
      { concurrency: 128, slots: 6, running: 6, latencyMs: 200, refillMs: 410 },
      18,
    ],
    ["the same lane, a 100 ms refill: by rate, 6/200 × 100 × 2", { concurrency: 128, slots: 6, running: 6, latencyMs: 200, refillMs: 100 }, 6],
    ["the same lane with a short refill: by rate", { concurrency: 128, slots: 6, running: 6, latencyMs: 666, refillMs: 300 }, 6],
    ["first pull of a lane of 6: its slots (its first tasks end together)", { concurrency: 128, slots: 6, running: 0, latencyMs: null, refillMs: null }, 6],
    ["slots over the concurrency count as the concurrency", { concurrency: 4, slots: 10, running: 4, latencyMs: 10, refillMs: 100 }, 4],
    ["no slots: none", { concurrency: 128, slots: 0, running: 0, latencyMs: null, refillMs: null }, 0],
    ["a zero latency counts as 1 ms: 2/1 × 5 × 2", { concurrency: 128, running: 2, latencyMs: 0, refillMs: 5 }, 20],
  ])("%s", (_label, input, expected) => {
    expect(standbyTarget(input)).toBe(expected);
  });
});

describe("a lane's share of standby tasks", () => {
  it.each([
    ["a swarm's start: 900 waiting over 17 lanes", { waiting: 900, held: 0, laneHeld: 0, openLanes: 17 }, 53],
    ["its end: 100 waiting over 17 lanes", { waiting: 100, held: 0, laneHeld: 0, openLanes: 17 }, 6],
    ["one task left: 1", { waiting: 1, held: 0, laneHeld: 0, openLanes: 17 }, 1],
    ["nothing left: none", { waiting: 0, held: 0, laneHeld: 0, openLanes: 17 }, 0],
    ["no open lane counted (a lane the room has not heard of yet): all of it", { waiting: 40, held: 0, laneHeld: 0, openLanes: 0 }, 40],
    // 17 lanes pull in turn at 306 waiting: each is granted 18, where over what waits alone the
    // first would get 18 and the last 11.
    ["the first of 17 lanes at 306 waiting", { waiting: 306, held: 0, laneHeld: 0, openLanes: 17 }, 18],
    ["the last of them: 18 waiting, 288 held by the other 16", { waiting: 18, held: 288, laneHeld: 0, openLanes: 17 }, 18],
    ["a lane that holds its share already: none", { waiting: 50, held: 120, laneHeld: 10, openLanes: 17 }, 0],
    ["a lane that holds part of its share: the rest", { waiting: 50, held: 120, laneHeld: 4, openLanes: 17 }, 6],
    ["a lane that holds more than its share: none, never less", { waiting: 0, held: 40, laneHeld: 30, openLanes: 17 }, 0],
  ])("%s", (_label, input, expected) => {
    expect(standbyShare(input)).toBe(expected);
  });
});

/** `n` latencies: the first `slow` at `slowMs`, the rest at `ms`. */
const latencies = (n: number, ms: number, slow = 0, slowMs = ms): number[] => Array.from({ length: n }, (_, i) => (i < slow ? slowMs : ms));

describe("whether a swarm's calls are even", () => {
  it.each([
    ["a fixed latency", latencies(200, 200), true],
    ["a fixed latency, a few calls slowed by a busy machine (p90 still the median)", latencies(200, 200, 15, 900), true],
    ["p90 at 1.5 times the median: even", latencies(200, 200, 30, 300), true],
    ["p90 just past 1.5 times the median: not even", latencies(200, 200, 30, 301), false],
    ["a long tail: a fifth of the calls 5 times the median", latencies(200, 300, 40, 1_500), false],
    [`fewer than ${EVEN_CALLS_MIN_SAMPLES} finished calls, all alike: nothing shows them uneven, so even`, latencies(EVEN_CALLS_MIN_SAMPLES - 1, 200), true],
    [`fewer than ${EVEN_CALLS_MIN_SAMPLES}, a long tail among them: too few to tell, so even`, latencies(EVEN_CALLS_MIN_SAMPLES - 1, 300, 5, 1_500), true],
    [`${EVEN_CALLS_MIN_SAMPLES} of them with that tail: uneven`, latencies(EVEN_CALLS_MIN_SAMPLES, 300, 5, 1_500), false],
    ["no calls (a swarm's first round): even", [], true],
    ["calls that took no time: no median to compare with", latencies(50, 0), false],
  ])("%s", (_label, sample, expected) => {
    expect(areCallsEven(sample)).toBe(expected);
  });

  it("reads lognormal 300/1500 latencies as uneven, with or without headers that come at 484 ms", () => {
    // Quantiles of lognormal(median 300 ms, p95 1,500 ms), sigma = ln 5 / 1.645.
    const sigma = Math.log(5) / 1.645;
    const quantile = (p: number): number => 300 * Math.exp(sigma * inverseNormal(p));
    const draws = Array.from({ length: 199 }, (_, i) => quantile((i + 1) / 200));
    expect(areCallsEven(draws)).toBe(false);
    expect(areCallsEven(draws.map((ms) => Math.max(484, ms)))).toBe(false);
  });
});

/** The standard normal's inverse CDF (Acklam's rational approximation, |error| < 1.2e-9). */
function inverseNormal(p: number): number {
  const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const poly = (k: number[], x: number): number => k.reduce((sum, coefficient) => sum * x + coefficient, 0);
  if (p < 0.02425) {
    const q = Math.sqrt(-2 * Math.log(p));
    return poly(c, q) / (poly(d, q) * q + 1);
  }
  if (p > 1 - 0.02425) return -inverseNormal(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return (poly(a, r) * q) / (poly(b, r) * r + 1);
}

describe("the standby tasks the room may still hand out near a swarm's end", () => {
  it.each([
    [
      "even calls, 150 waiting, W = 100, one lane running the window: all but the last window",
      { waiting: 150, window: 100, laneRuns: 100, evenCalls: true },
      50,
    ],
    ["even calls, 300 waiting, W = 100, a lane running 6: one round of its own (6)", { waiting: 300, window: 100, laneRuns: 6, evenCalls: true }, 6],
    ["even calls, 131 waiting, W = 100, a lane running 6: 6 of the 31 past the last window", { waiting: 131, window: 100, laneRuns: 6, evenCalls: true }, 6],
    ["even calls, 103 waiting, a lane running 6: the 3 past the last window", { waiting: 103, window: 100, laneRuns: 6, evenCalls: true }, 3],
    ["even calls, the last window waiting: none (each goes to a lane as its slots free)", { waiting: 100, window: 100, laneRuns: 6, evenCalls: true }, 0],
    ["even calls, fewer than a window waiting: none", { waiting: 40, window: 100, laneRuns: 6, evenCalls: true }, 0],
    ["a lane that runs nothing: none", { waiting: 300, window: 100, laneRuns: 0, evenCalls: true }, 0],
    ["uneven calls: no bound of its own", { waiting: 40, window: 100, laneRuns: 6, evenCalls: false }, Number.POSITIVE_INFINITY],
  ])("%s", (_label, input, expected) => {
    expect(tailStandbyRoom(input)).toBe(expected);
  });
});

describe("the standby tasks a grant may hand out while the window has room", () => {
  it.each([
    // 1,000 tasks at W = 1,000: a lane's second pull (its want met: 122 of 128 slots) at 750 free.
    ["every task fits the window's room: none", { pending: 628, freeRoom: 628 }, 0],
    ["fewer wait than the room holds: none", { pending: 40, freeRoom: 300 }, 0],
    ["10,000 tasks at W = 1,000, the window filling: what the room cannot take", { pending: 9_000, freeRoom: 400 }, 8_600],
    ["the window full: everything that waits", { pending: 900, freeRoom: 0 }, 900],
    ["a window over-used (negative room) counts as full", { pending: 50, freeRoom: -3 }, 50],
    ["nothing waits: none", { pending: 0, freeRoom: 0 }, 0],
    ["a negative count is none", { pending: -5, freeRoom: 0 }, 0],
  ])("%s", (_label, input, expected) => {
    expect(standbyPastRoom(input)).toBe(expected);
  });
});

describe("which ends free a slot for a standby task", () => {
  const failed = (retryable: boolean): TaskOutcome => ({ kind: "failed", class: "upstream_error", message: "boom", retryable, retryAfterMs: null });
  it.each([
    ["a success", { kind: "succeeded", output: "ok", finishReason: "stop" } as TaskOutcome, true],
    ["a failure never retried", failed(false), true],
    ["a retryable failure (it keeps its place to retry)", failed(true), false],
    ["a deferral (it keeps its place)", { kind: "deferred", retryAfterMs: 0, reason: "no key" } as TaskOutcome, false],
  ])("%s", (_label, outcome, expected) => {
    expect(freesSlot(outcome)).toBe(expected);
  });
});
