import { describe, expect, it } from "vitest";
import { reduceOutputs, ReduceSpecSchema, type TaskOutput, type CodeReduceSpec } from "./reducers.ts";

const out = (...pairs: [string, string][]): TaskOutput[] => pairs.map(([task_id, output]) => ({ task_id, output }));

describe("reducers", () => {
  it("collect keeps the outputs in task order", () => {
    expect(reduceOutputs({ kind: "collect" }, out(["a", "1"], ["b", "2"]))).toEqual({
      kind: "collect",
      results: out(["a", "1"], ["b", "2"]),
      truncated: false,
    });
  });

  it.each([
    ["the default template", {}, "## a\n\none\n\n## b\n\ntwo"],
    ["a custom template and separator", { template: "{index}. {output} ({task_id})", separator: "\n" }, "1. one (a)\n2. two (b)"],
  ])("concat with %s", (_label, options, text) => {
    const spec = ReduceSpecSchema.parse({ kind: "concat", ...options }) as CodeReduceSpec;
    expect(reduceOutputs(spec, out(["a", "one"], ["b", "two"]))).toEqual({ kind: "concat", text, truncated: false });
  });

  it("concat does not expand placeholders that appear inside an output", () => {
    const spec = ReduceSpecSchema.parse({ kind: "concat", template: "{output}" }) as CodeReduceSpec;
    expect(reduceOutputs(spec, out(["a", "literal {task_id}"]))).toMatchObject({ text: "literal {task_id}" });
  });

  it("json_merge concatenates arrays, deep-merges objects, lists conflicts and unparseable results", () => {
    const merged = reduceOutputs(
      { kind: "json_merge" },
      out(
        ["a", '{"findings":[{"id":1}],"meta":{"repo":"x","files":1}}'],
        ["b", '{"findings":[{"id":2}],"meta":{"repo":"x","files":2},"extra":true}'],
        ["c", "not json"],
        ["d", '{"meta":{"files":3}}'],
      ),
    );
    expect(merged).toEqual({
      kind: "json_merge",
      value: { findings: [{ id: 1 }, { id: 2 }], meta: { repo: "x", files: 1 }, extra: true },
      conflicts: [
        {
          path: "meta.files",
          values: [
            { task_id: "a", value: 1 },
            { task_id: "b", value: 2 },
            { task_id: "d", value: 3 },
          ],
        },
      ],
      invalid: ["c"],
    });
  });

  it.each([
    ["a clear majority (loose)", "loose", out(["a", "Yes."], ["b", "yes"], ["c", "No"]), { winner: "yes", votes: 2, total: 3, tie: false }],
    ["a tie goes to the first seen", "loose", out(["a", "red"], ["b", "blue"]), { winner: "red", votes: 1, total: 2, tie: true }],
    ["exact keeps case apart", "exact", out(["a", "Yes"], ["b", "yes"], ["c", "yes"]), { winner: "yes", votes: 2, total: 3, tie: false }],
    ["no results", "loose", out(), { winner: null, votes: 0, total: 0, tie: false }],
  ] as const)("vote: %s", (_label, normalize, outputs, expected) => {
    expect(reduceOutputs({ kind: "vote", normalize }, outputs)).toMatchObject({ kind: "vote", ...expected });
  });

  it("refuses reducers it does not know, and an llm reducer with a context too small to merge anything", () => {
    expect(ReduceSpecSchema.safeParse({ kind: "median" }).success).toBe(false);
    expect(ReduceSpecSchema.safeParse({ kind: "llm" }).success).toBe(true);
    expect(ReduceSpecSchema.safeParse({ kind: "llm", context_tokens: 10 }).success).toBe(false);
  });
});
