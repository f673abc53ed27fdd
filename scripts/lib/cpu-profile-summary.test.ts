import { describe, expect, it } from "vitest";
import { formatSelfTimeRows, selfTimeByFunction, samplesByModule, type CpuProfile } from "./cpu-profile-summary.ts";

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

describe("samples by source module", () => {
  // Lines 0-1 come before any module; each `// path` line opens the module the lines after it belong to.
  const bundle = [
    "var __defProp = Object.defineProperty;",
    "",
    "// ../../src/core/hash32.ts",
    "function hash32() {}",
    "// task-trace.ts",
    "class AttemptTrace {}",
    "// ../../node_modules/eventsource-parser/dist/parse.js",
    "function parse() {}",
  ].join("\n");
  const frames: Array<[string, number]> = [
    ["(idle)", -1],
    ["(program)", -1],
    ["hash32", 3],
    ["AttemptTrace", 5],
    ["", 4],
    ["parse", 7],
    ["__defProp", 0],
    ["(garbage collector)", -1],
  ];
  it.each([
    [
      "a function's samples go to the module it is in, its opening line included",
      [3, 5, 4, 4],
      [
        { name: "task-trace.ts", samples: 3 },
        { name: "../../src/core/hash32.ts", samples: 1 },
      ],
    ],
    ["a package's module is named as the bundle names it", [6], [{ name: "../../node_modules/eventsource-parser/dist/parse.js", samples: 1 }]],
    ["code before the first module is the bundle's own", [7], [{ name: "(the bundle's own code)", samples: 1 }]],
    [
      "idle is left out; native time and the garbage collector keep their names",
      [1, 2, 8, 8],
      [
        { name: "(garbage collector)", samples: 2 },
        { name: "(program)", samples: 1 },
      ],
    ],
  ])("%s", (_label, samples, expected) => {
    expect(samplesByModule(profileOf(frames, samples, 250), bundle)).toEqual(expected);
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
