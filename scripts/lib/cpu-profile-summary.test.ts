import { describe, expect, it } from "vitest";
import { formatSelfTimeRows, selfTimeByFunction, type CpuProfile } from "./cpu-profile-summary.ts";

/** A profile whose samples hit the given nodes, each sample `deltaUs` after the last. */
function profileOf(frames: Array<[name: string, line: number]>, samples: number[], deltaUs = 1_000): CpuProfile {
  return {
    nodes: frames.map(([functionName, lineNumber], i) => ({ id: i + 1, callFrame: { functionName, url: "index.js", lineNumber } })),
    samples,
    timeDeltas: samples.map(() => deltaUs),
  };
}

describe("self time by function", () => {
  const frames: Array<[string, number]> = [
    ["(root)", -1],
    ["(idle)", -1],
    ["(program)", -1],
    ["runLane", 50_671],
    ["", 9],
    ["(garbage collector)", -1],
  ];
  it.each([
    ["idle and the root are left out; native time stays", [1, 2, 3, 3], [{ name: "(program)", ms: 2 }]],
    [
      "a function is named with its 1-based line",
      [4, 4, 4, 3],
      [
        { name: "runLane:50672", ms: 3 },
        { name: "(program)", ms: 1 },
      ],
    ],
    ["an anonymous function is named by its line", [5], [{ name: "(anonymous):10", ms: 1 }]],
    ["the garbage collector is its own entry", [6, 6], [{ name: "(garbage collector)", ms: 2 }]],
    ["no samples: nothing", [], []],
  ])("%s", (_label, samples, expected) => {
    expect(selfTimeByFunction(profileOf(frames, samples))).toEqual(expected);
  });
});

describe("self time rows", () => {
  it("prints the largest rows per task, with their share of all", () => {
    const rows = [
      { name: "fetch:0", ms: 300 },
      { name: "(program)", ms: 100 },
      { name: "runLane:9", ms: 100 },
    ];
    expect(formatSelfTimeRows(rows, 1_000, 2)).toEqual(["    0.300 ms   60.0%  fetch:0", "    0.100 ms   20.0%  (program)"]);
  });
});
