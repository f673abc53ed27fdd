import { describe, expect, it } from "vitest";
import { estimatePromptTokens } from "./estimate-swarm.ts";
import { chunkForContext, fixedReducerPromptTokens, REDUCER_MARKER, reducerInputBudget, toReducerRequest, type ReduceItem } from "./llm-reduction.ts";

/** An item of exactly 110 estimated tokens: 396 chars → 99 + 4, plus 7 for its wrapper with a one-char id. */
const item = (id: string, chars = 396): ReduceItem => ({ id, text: "x".repeat(chars) });
const ids = (chunks: ReduceItem[][]): string[][] => chunks.map((chunk) => chunk.map((i) => i.id));

/** A deterministic pseudo-random sequence (mulberry32), so property cases are reproducible. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("reducerInputBudget", () => {
  it.each([
    ["a roomy context", 32_000, 2_048, 500, 32_000 - 2_048 - 500 - 1_600],
    ["a margin rounded up", 2_010, 16, 0, 2_010 - 16 - 101],
    ["a context already full", 2_000, 2_048, 300, 1],
  ])("%s", (_label, context, output, fixed, budget) => {
    expect(reducerInputBudget(context, output, fixed)).toBe(budget);
  });
});

describe("chunkForContext", () => {
  it.each([
    ["no items", [], 1_000, []],
    ["items that all fit, in one chunk", ["a", "b", "c"], 1_000, [["a", "b", "c"]]],
    [
      "consecutive groups in order",
      ["a", "b", "c", "d", "e", "f"],
      340,
      [
        ["a", "b", "c"],
        ["d", "e", "f"],
      ],
    ],
    ["a last item alone when no group can spare one", ["a", "b", "c", "d", "e"], 250, [["a", "b"], ["c", "d"], ["e"]]],
    [
      "a last item paired with one taken from a group of three",
      ["a", "b", "c", "d", "e", "f", "g"],
      340,
      [
        ["a", "b", "c"],
        ["d", "e"],
        ["f", "g"],
      ],
    ],
    ["a single item", ["a"], 1_000, [["a"]]],
  ])("cuts %s", (_label, names, budget, chunks) => {
    const result = chunkForContext(
      names.map((name) => item(name)),
      budget,
    );
    expect(ids(result.chunks)).toEqual(chunks);
    expect(result.truncated).toEqual([]);
  });

  it("cuts an item longer than half the budget, says which, and keeps its start", () => {
    const long = { id: "big", text: `START ${"y".repeat(5_000)}` };
    const { chunks, truncated } = chunkForContext([item("a"), long, item("b")], 400);
    expect(truncated).toEqual(["big"]);
    const cut = chunks.flat().find((i) => i.id === "big");
    expect(cut?.text).toMatch(/^START y+\n\[… truncated to fit the reducer's context\]$/);
    expect(estimatePromptTokens(null, cut?.text ?? "")).toBeLessThanOrEqual(200);
    expect(chunks.flat().map((i) => i.id)).toEqual(["a", "big", "b"]);
  });

  it.each([1, 2, 3, 4, 5, 6, 7, 8])("keeps every call within the context and at least halves the count (seed %i)", (seed) => {
    const next = random(seed);
    const context = 2_000 + Math.floor(next() * 30_000);
    const output = 16 + Math.floor(next() * 1_000);
    const instructions = next() < 0.5 ? null : "Answer as a table.";
    const goal = next() < 0.5 ? null : "Find the bugs";
    const budget = reducerInputBudget(context, output, fixedReducerPromptTokens(instructions, goal));
    const items = Array.from({ length: 1 + Math.floor(next() * 60) }, (_, i) => ({
      id: `task-${i}`,
      text: "z".repeat(Math.floor(next() * next() * context * 6)),
    }));

    const { chunks } = chunkForContext(items, budget);
    expect(chunks.flat().map((i) => i.id)).toEqual(items.map((i) => i.id));
    expect(chunks.length).toBeLessThanOrEqual(Math.ceil(items.length / 2));
    chunks.forEach((chunk, i) => {
      if (i < chunks.length - 1) expect(chunk.length).toBeGreaterThanOrEqual(2);
      for (const level of [1, 2]) {
        for (const final of [false, true]) {
          const { system, prompt } = toReducerRequest({ instructions, goal, items: chunk, level, final });
          expect(estimatePromptTokens(system, prompt) + output).toBeLessThanOrEqual(context);
        }
      }
    });
  });
});

describe("toReducerRequest", () => {
  const items = [
    { id: "auth", text: "Found 2 issues." },
    { id: "db", text: "No issues." },
  ];

  it("wraps each item in a result block after the goal and the item count", () => {
    const { prompt } = toReducerRequest({ instructions: null, goal: "Review the repo", items, level: 1, final: true });
    expect(prompt).toBe('Goal:\nReview the repo\n\nitems: 2\n\n<result id="auth">\nFound 2 issues.\n</result>\n\n<result id="db">\nNo issues.\n</result>');
  });

  it("leaves the goal out when there is none", () => {
    expect(toReducerRequest({ instructions: null, goal: null, items, level: 1, final: true }).prompt).toMatch(/^items: 2\n\n<result id="auth">/);
  });

  it.each([
    ["the final call", true, /Produce the final answer for the user/],
    ["an intermediate call", false, /Produce a merged intermediate summary that keeps every distinct finding; it will be merged again with others\./],
  ])("tells %s what to produce", (_label, final, wording) => {
    const { system } = toReducerRequest({ instructions: null, goal: null, items, level: 1, final });
    expect(system.split("\n")[0]).toBe(REDUCER_MARKER);
    expect(system).toMatch(wording);
  });

  it.each([
    ["the final call", true, "Instructions from the user:\nOne line per issue."],
    ["an intermediate call", false, "The user's instructions for the final answer (keep what it will need):\nOne line per issue."],
  ])("passes the user's instructions to %s", (_label, final, text) => {
    expect(toReducerRequest({ instructions: "One line per issue.", goal: null, items, level: 1, final }).system).toContain(text);
  });

  it("tells a higher level that its items are summaries", () => {
    expect(toReducerRequest({ instructions: null, goal: null, items, level: 2, final: false }).system).toContain("merged summaries of earlier groups");
    expect(toReducerRequest({ instructions: null, goal: null, items, level: 1, final: false }).system).not.toContain("merged summaries of earlier groups");
  });
});

describe("fixedReducerPromptTokens", () => {
  it.each([
    [null, null],
    ["Answer as a table.", null],
    [null, "x".repeat(4_000)],
  ])("covers every variant of the request without items (instructions %s)", (instructions, goal) => {
    const fixed = fixedReducerPromptTokens(instructions, goal);
    for (const level of [1, 2, 3]) {
      for (const final of [false, true]) {
        const { system, prompt } = toReducerRequest({ instructions, goal, items: [], level, final });
        expect(estimatePromptTokens(system, prompt)).toBeLessThanOrEqual(fixed);
      }
    }
  });
});
