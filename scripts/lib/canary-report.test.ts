import { describe, expect, it } from "vitest";
import { toColumns, toSparkline } from "./canary-report.ts";

describe("toSparkline", () => {
  it.each([
    ["scaled to the peak, · for nothing in flight", [0, 1, 2, 4], 100, "·▃▅█"],
    ["all the same", [5, 5, 5], 100, "███"],
    ["nothing at all", [0, 0], 100, "··"],
    ["folded to the columns, each the peak of its seconds", [1, 4, 0, 0, 2, 2], 3, "█·▅"],
  ])("%s", (_label, values, columns, line) => {
    expect(toSparkline(values, columns)).toBe(line);
  });
});

describe("toColumns", () => {
  it("pads every column but the last to its widest cell", () => {
    expect(
      toColumns([
        ["s", "in flight"],
        ["10", "3"],
      ]),
    ).toEqual(["s   in flight", "10  3"]);
  });
});
