import { describe, expect, it } from "vitest";
import { percentile, percentiles } from "./percentile.ts";

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
