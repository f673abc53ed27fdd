// When a batch may start another inline retry round: by round count, by how late it would start,
// and by whether its calls could outlast the batch's share of the 15-minute wall time.
import { describe, expect, it } from "vitest";
import { allowsInlineRound, DEFAULT_INLINE_BUDGET } from "../inline-budget.ts";

const T0 = 1_800_000_000_000;

describe("allowsInlineRound with the default budget (10 rounds, start within 120 s, end within 12 min)", () => {
  it.each([
    { name: "first round, 1 s after the start, 60 s calls", round: 1, startsAfterMs: 1_000, callsMs: 60_000, allowed: true },
    { name: "the 10th round", round: 10, startsAfterMs: 30_000, callsMs: 60_000, allowed: true },
    { name: "an 11th round", round: 11, startsAfterMs: 30_000, callsMs: 60_000, allowed: false },
    { name: "starting exactly at 120 s", round: 2, startsAfterMs: 120_000, callsMs: 60_000, allowed: true },
    { name: "starting at 120.001 s", round: 2, startsAfterMs: 120_001, callsMs: 60_000, allowed: false },
    { name: "a long task (600 s calls) 2 s in", round: 1, startsAfterMs: 2_000, callsMs: 600_000, allowed: true },
    { name: "a long task whose calls could end past 12 min", round: 1, startsAfterMs: 2_000, callsMs: 719_000, allowed: false },
    { name: "two waves of 600 s calls", round: 1, startsAfterMs: 1_000, callsMs: 1_200_000, allowed: false },
  ])("$name → $allowed", ({ round, startsAfterMs, callsMs, allowed }) => {
    expect(allowsInlineRound(DEFAULT_INLINE_BUDGET, T0, { round, startsAt: T0 + startsAfterMs, callsMs })).toBe(allowed);
  });
});
