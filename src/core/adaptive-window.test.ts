import { describe, expect, it } from "vitest";
import { adjustWindow, defaultRetryBudget } from "./adaptive-window.ts";

describe("adaptive window", () => {
  const at = (window: number, credit = 0, decreasedAt: number | null = null) => ({ window, credit, decreasedAt });
  const limited = (now: number) => ({ successes: 10, rateLimited: true, now });
  const succeeded = (successes: number) => ({ successes, rateLimited: false, now: 50_000 });

  it.each([
    ["a 429 round shrinks ×0.7", at(64, 0.5), limited(10_000), 64, at(44, 0, 10_000)],
    ["never below 1", at(1), limited(10_000), 64, at(1, 0, 10_000)],
    ["3 → 2", at(3), limited(10_000), 64, at(2, 0, 10_000)],
    ["only once a second", at(44, 0.3, 9_500), limited(10_000), 64, at(44, 0, 9_500)],
    ["again after a second", at(44, 0, 9_000), limited(10_000), 64, at(30, 0, 10_000)],
    ["+1 per window's worth of successes", at(4), succeeded(4), 64, at(5)],
    ["half a window of successes is half a step", at(4), succeeded(2), 64, at(4, 0.5)],
    ["never above the spec's concurrency", at(64), succeeded(500), 64, at(64)],
    ["reaches the cap and stops", at(63, 0.9), succeeded(500), 64, at(64)],
  ])("%s", (_label, state, events, max, expected) => {
    const next = adjustWindow(state, events, max);
    expect(next.window).toBe(expected.window);
    expect(next.credit).toBeCloseTo(expected.credit, 9);
    expect(next.decreasedAt).toBe(expected.decreasedAt);
  });

  it("shrinks once per round, however many calls of the round were rate limited", () => {
    expect(adjustWindow(at(100), { successes: 0, rateLimited: true, now: 1 }, 100).window).toBe(70);
  });

  it("converges back up after a 429: from 8 to 16 takes about a window's worth of successes per step", () => {
    let state = at(8);
    let successes = 0;
    while (state.window < 16) {
      state = adjustWindow(state, { successes: 1, rateLimited: false, now: 0 }, 16);
      successes += 1;
    }
    expect(successes).toBe(8 + 9 + 10 + 11 + 12 + 13 + 14 + 15);
  });

  it.each([
    [1, 10],
    [10, 10],
    [11, 11],
    [500, 500],
    [10_000, 10_000],
  ])("the default retry budget of %i tasks is %i", (tasks, budget) => {
    expect(defaultRetryBudget(tasks)).toBe(budget);
  });
});
