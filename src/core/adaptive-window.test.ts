import { describe, expect, it } from "vitest";
import { adjustWindow, defaultRetryBudget } from "./adaptive-window.ts";

describe("adaptive window", () => {
  it.each([
    [{ window: 64, credit: 0.5 }, { successes: 10, rateLimited: true }, 64, { window: 32, credit: 0 }],
    [{ window: 1, credit: 0 }, { successes: 0, rateLimited: true }, 64, { window: 1, credit: 0 }],
    [{ window: 3, credit: 0 }, { successes: 0, rateLimited: true }, 64, { window: 1, credit: 0 }],
    // +1 per window's worth of successes
    [{ window: 4, credit: 0 }, { successes: 4, rateLimited: false }, 64, { window: 5, credit: 0 }],
    [{ window: 4, credit: 0 }, { successes: 2, rateLimited: false }, 64, { window: 4, credit: 0.5 }],
    // never above the spec's concurrency
    [{ window: 64, credit: 0 }, { successes: 500, rateLimited: false }, 64, { window: 64, credit: 0 }],
    [{ window: 63, credit: 0.9 }, { successes: 500, rateLimited: false }, 64, { window: 64, credit: 0 }],
  ])("%o after %o (max %i) → %o", (state, events, max, expected) => {
    const next = adjustWindow(state, events, max);
    expect(next.window).toBe(expected.window);
    expect(next.credit).toBeCloseTo(expected.credit, 9);
  });

  it("halves once per round, however many calls of the round were rate limited", () => {
    expect(adjustWindow({ window: 100, credit: 0 }, { successes: 0, rateLimited: true }, 100).window).toBe(50);
  });

  it("converges back up after a 429: from 8 to 16 takes about a window's worth of successes per step", () => {
    let state = { window: 8, credit: 0 };
    let successes = 0;
    while (state.window < 16) {
      state = adjustWindow(state, { successes: 1, rateLimited: false }, 16);
      successes += 1;
    }
    expect(successes).toBe(8 + 9 + 10 + 11 + 12 + 13 + 14 + 15);
  });

  it.each([
    [1, 10],
    [20, 10],
    [21, 11],
    [500, 250],
    [10_000, 5_000],
  ])("the default retry budget of %i tasks is %i", (tasks, budget) => {
    expect(defaultRetryBudget(tasks)).toBe(budget);
  });
});
