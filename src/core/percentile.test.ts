import { describe, expect, it } from "vitest";
import { censoredPercentile, percentile, percentiles } from "./percentile.ts";

describe("percentile (nearest rank)", () => {
  const ten = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5];
  it.each<[readonly number[], number, number | null]>([
    [[], 50, null],
    [[42], 0, 42],
    [[42], 50, 42],
    [[42], 100, 42],
    [ten, 0, 1],
    [ten, 10, 1],
    [ten, 11, 2],
    [ten, 50, 5],
    [ten, 51, 6],
    [ten, 95, 10],
    [ten, 100, 10],
    [[15, 20, 35, 40, 50], 30, 20], // the textbook example: rank ⌈0.3 × 5⌉ = 2
    [[15, 20, 35, 40, 50], 40, 20],
    [[15, 20, 35, 40, 50], 50, 35],
    [[3, 1, 2, Number.NaN], 100, 3], // NaN ignored
    [[Number.NaN], 50, null],
    [[-5, 0, 5], 50, 0],
    [ten, -1, null],
    [ten, 101, null],
    [ten, Number.NaN, null],
  ])("%j p%d → %s", (values, p, expected) => {
    expect(percentile(values, p)).toBe(expected);
  });

  it.each<[readonly number[], readonly number[], (number | null)[]]>([
    [[], [50, 95], [null, null]],
    [ten, [50, 95], [5, 10]],
    [ten, [95, 50, 0], [10, 5, 1]], // in the order asked
    [ten, [50, 101, Number.NaN], [5, null, null]],
    [
      [3, 1, 2, Number.NaN],
      [0, 100],
      [1, 3],
    ],
    [
      [-0.5, -5, 1e9, 0],
      [25, 75],
      [-5, 0],
    ],
    [[], [], []],
  ])("percentiles(%j, %j) → %j, as percentile gives each", (values, ps, expected) => {
    expect(percentiles(values, ps)).toEqual(expected);
    expect(ps.map((p) => percentile(values, p))).toEqual(expected);
  });

  it("does not reorder its input", () => {
    const values = [3, 1, 2];
    percentile(values, 50);
    expect(values).toEqual([3, 1, 2]);
  });

  it("sorts numerically, not as strings", () => {
    expect(percentile([100, 9, 20], 100)).toBe(100);
    expect(percentile([100, 9, 20], 1)).toBe(9);
  });
});

describe("censoredPercentile (Kaplan–Meier: some values only bounded below)", () => {
  const ten = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5];
  const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

  it.each([1, 10, 11, 50, 51, 95, 100])("with none censored, p%d is the nearest-rank percentile", (p) => {
    expect(censoredPercentile(ten, [], p)).toBe(percentile(ten, p));
    expect(
      censoredPercentile(
        range(1_000, (i) => i + 1),
        [],
        p,
      ),
    ).toBe(
      percentile(
        range(1_000, (i) => i + 1),
        p,
      ),
    );
  });

  it.each<[string, readonly number[], readonly number[], number, number | null]>([
    ["nothing ended", [], [5, 6], 50, null],
    ["nothing at all", [], [], 50, null],
    // Ended at 3, 5, 7; still running at 4 and 6 (the textbook case): S = 0.8 after 3, 0.8 × 2/3 after 5, 0 after 7.
    ["the textbook case, p20", [3, 5, 7], [4, 6], 20, 3],
    ["the textbook case, p40", [3, 5, 7], [4, 6], 40, 5],
    ["the textbook case, p50", [3, 5, 7], [4, 6], 50, 7],
    ["the textbook case, p60", [3, 5, 7], [4, 6], 60, 7],
    ["one running as long as an ended one is still at risk then", [5], [5], 50, 5],
    ["one running as long as an ended one is still at risk then, p60", [5], [5], 60, null],
    // A swarm's first second: its 20 fast calls ended, 80 still running at 1 s. Its p95 is not
    // 1 s (where those 80 are now): nothing says yet where it is.
    ["the fast ones ended, the rest running: p95 unknown", range(20, (i) => i + 1), range(80, () => 1_000), 95, null],
    ["the fast ones ended, the rest running: p10 known", range(20, (i) => i + 1), range(80, () => 1_000), 10, 10],
    // Calls that ran less than a latency tell little of it: 100 ended at 1..100 ms and 900 started
    // 5 ms ago, which count as ending past 5 ms as the ended ones did: 96 (as ended calls of 5 ms: 5).
    ["calls just started do not pull it down", range(100, (i) => i + 1), range(900, () => 5), 95, 96],
    // 100 started 10 ms ago: 95% of the calls end by 10 ms, the rest as those ended past 10 ms did.
    ["calls just started count as the ended ones past their time", range(100, (i) => i + 1), range(100, () => 10), 95, 96],
    ["NaN ignored", [3, Number.NaN, 1, 2], [Number.NaN], 100, 3],
    ["p0", ten, [], 0, null],
    ["p over 100", ten, [], 101, null],
  ])("%s", (_label, events, censored, p, expected) => {
    expect(censoredPercentile(events, censored, p)).toBe(expected);
  });
});
