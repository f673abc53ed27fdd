import { describe, expect, it } from "vitest";
import { backoffDelayMs, DEFAULT_BACKOFF, toQueueDelaySeconds } from "./retry-policy.ts";

const always = (r: number) => (): number => r;

describe("backoffDelayMs", () => {
  it("defaults to base 1 s, cap 60 s", () => {
    expect(DEFAULT_BACKOFF).toEqual({ baseMs: 1_000, capMs: 60_000 });
  });

  it.each([
    // attempt, random, expected (defaults: base 1 s, cap 60 s)
    [1, 0.999, 999],
    [1, 0.5, 500],
    [2, 0.5, 1_000],
    [3, 0.5, 2_000],
    [4, 1, 8_000],
    [6, 1, 32_000],
    [7, 1, 60_000], // 64 s capped to 60 s
    [50, 0.5, 30_000],
    [5_000, 0.5, 30_000], // 2^4999 overflows to Infinity: still the cap
    [1, 0, 0],
    [0, 1, 1_000], // attempt below 1 counts as 1
  ])("attempt %i with random %d → %d ms", (attempt, r, expected) => {
    expect(backoffDelayMs(attempt, null, DEFAULT_BACKOFF, always(r))).toBe(expected);
  });

  it.each([
    // retryAfterMs, random, expected: Retry-After is a floor, may exceed the cap, clamped to 12 h
    [5_000, 0.1, 5_000],
    [100, 0.9, 900],
    [120_000, 1, 120_000],
    [50 * 3_600_000, 1, 43_200_000],
    [-1, 0.5, 500], // negative: ignored
    [Number.NaN, 0.5, 500],
  ])("retryAfterMs %d with random %d → %d ms", (retryAfterMs, r, expected) => {
    expect(backoffDelayMs(1, retryAfterMs, DEFAULT_BACKOFF, always(r))).toBe(expected);
  });

  it.each([
    [{ baseMs: 200, capMs: 1_000 }, 3, 800],
    [{ baseMs: 200, capMs: 1_000 }, 4, 1_000],
    [{ baseMs: 0, capMs: 1_000 }, 2_000, 0],
  ])("options %j, attempt %i, random 1 → %d ms", (options, attempt, expected) => {
    expect(backoffDelayMs(attempt, null, options, always(1))).toBe(expected);
  });

  it("stays within [0, ceiling] for the default Math.random", () => {
    for (let i = 0; i < 200; i += 1) {
      const d = backoffDelayMs(3, null);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(4_000);
    }
  });
});

describe("toQueueDelaySeconds", () => {
  it.each([
    [0, 0],
    [1, 1],
    [999, 1],
    [1_000, 1],
    [1_001, 2],
    [59_999.5, 60],
    [-5_000, 0],
    [43_200_000, 43_200],
    [43_200_001, 43_200],
    [Number.POSITIVE_INFINITY, 43_200],
    [Number.NaN, 0],
  ])("%d ms → %i s", (ms, seconds) => {
    const out = toQueueDelaySeconds(ms);
    expect(out).toBe(seconds);
    expect(Number.isInteger(out)).toBe(true);
  });
});
