import { describe, expect, it } from "vitest";
import { SPAN_KIND } from "../../src/core/trace-span.ts";
import { formatSpanTree, sumChatSpans, type ReceivedSpan } from "./span-tree.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

function span(
  spanId: string,
  parentSpanId: string | null,
  name: string,
  attributes: ReceivedSpan["attributes"] = {},
  startMs = 0,
  code: 0 | 2 = 0,
): ReceivedSpan {
  return {
    traceId: TRACE,
    spanId,
    parentSpanId,
    name,
    kind: SPAN_KIND.internal,
    startMs,
    endMs: startMs + 250,
    attributes,
    status: { code },
    service: "edgeswarm-agent",
  };
}

const chat = (spanId: string, parent: string, input: number, output: number, cost: number, code: 0 | 2 = 0) =>
  span(
    spanId,
    parent,
    "chat mock-1",
    { "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": input, "gen_ai.usage.output_tokens": output, "gen_ai.usage.cost": cost },
    1,
    code,
  );

describe("sumChatSpans", () => {
  it.each<[string, ReceivedSpan[], ReturnType<typeof sumChatSpans>]>([
    ["no spans", [], { calls: 0, failed: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 }],
    [
      "only chat spans count",
      [span("a", null, "swarm"), chat("b", "a", 10, 2, 0.5), chat("c", "a", 5, 1, 0.25, 2)],
      { calls: 2, failed: 1, inputTokens: 15, outputTokens: 3, costUsd: 0.75 },
    ],
  ])("%s", (_name, spans, totals) => {
    expect(sumChatSpans(spans)).toEqual(totals);
  });
});

describe("formatSpanTree", () => {
  it("indents children under their parents, shows tokens and cost, and sums the chat spans", () => {
    const text = formatSpanTree([chat("c", "b", 10, 2, 0.5), span("b", "a", "invoke_agent t-1"), span("a", null, "swarm demo")]);
    expect(text.split("\n")).toEqual([
      "swarm demo · 250 ms · [edgeswarm-agent]",
      "  invoke_agent t-1 · 250 ms · [edgeswarm-agent]",
      "    chat mock-1 · 250 ms · tokens 10→2 · $0.500000 · [edgeswarm-agent]",
      "chat spans: 1 (0 failed) · tokens in 10 out 2 · cost $0.500000",
    ]);
  });

  it("prints spans whose parent has not arrived at the top, and counts the children it leaves out", () => {
    const kids = Array.from({ length: 3 }, (_, i) => span(`k${i}`, "root", `invoke_agent t-${i}`, {}, i));
    const lines = formatSpanTree([span("root", "missing", "orphan"), ...kids], { childrenShown: 2 }).split("\n");
    expect(lines[0]).toBe("orphan · 250 ms · [edgeswarm-agent]");
    expect(lines.slice(1, 4)).toEqual(["  invoke_agent t-0 · 250 ms · [edgeswarm-agent]", "  invoke_agent t-1 · 250 ms · [edgeswarm-agent]", "  … 1 more"]);
  });
});
