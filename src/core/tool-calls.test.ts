import { describe, expect, it } from "vitest";
import { accumulateToolCalls } from "./tool-calls.ts";

// Fixtures written from the vendors' documented streaming shapes (choices[0].delta.tool_calls per chunk).
describe("tool-call normalization", () => {
  it.each([
    [
      "OpenAI: id and name first, arguments in fragments, two parallel calls",
      [
        [{ index: 0, id: "call_abc", type: "function", function: { name: "lookup", arguments: "" } }],
        [{ index: 0, function: { arguments: '{"path":' } }],
        [{ index: 1, id: "call_def", type: "function", function: { name: "http_fetch", arguments: '{"url":"https://a.example"}' } }],
        [{ index: 0, function: { arguments: '"auth.py"}' } }],
      ],
      [
        { id: "call_abc", name: "lookup", arguments: { ok: true, value: { path: "auth.py" } } },
        { id: "call_def", name: "http_fetch", arguments: { ok: true, value: { url: "https://a.example" } } },
      ],
    ],
    [
      "Kimi: ids like functions.name:0 are kept exactly",
      [[{ index: 0, id: "functions.lookup:0", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }]],
      [{ id: "functions.lookup:0", name: "lookup", arguments: { ok: true, value: { q: "x" } } }],
    ],
    [
      "Gemini: no index, empty ids, one whole call per delta",
      [
        [{ id: "", type: "function", function: { name: "scratchpad_get", arguments: '{"key":"a"}' } }],
        [{ id: "", type: "function", function: { name: "scratchpad_get", arguments: '{"key":"b"}' } }],
      ],
      [
        { id: "call_0", name: "scratchpad_get", arguments: { ok: true, value: { key: "a" } } },
        { id: "call_1", name: "scratchpad_get", arguments: { ok: true, value: { key: "b" } } },
      ],
    ],
    [
      "Anthropic-compatible: the first tool call has index 1",
      [[{ index: 1, id: "toolu_01", type: "function", function: { name: "lookup", arguments: "" } }], [{ index: 1, function: { arguments: '{"n":1}' } }]],
      [{ id: "toolu_01", name: "lookup", arguments: { ok: true, value: { n: 1 } } }],
    ],
    [
      "arguments sent as an object",
      [[{ index: 0, id: "c1", function: { name: "lookup", arguments: { path: "db.py" } } }]],
      [{ id: "c1", name: "lookup", arguments: { ok: true, value: { path: "db.py" } } }],
    ],
    [
      "no arguments at all means an empty object",
      [[{ index: 0, id: "c1", function: { name: "scratchpad_list" } }]],
      [{ id: "c1", name: "scratchpad_list", arguments: { ok: true, value: {} } }],
    ],
  ])("%s", (_label, deltas, expected) => {
    expect(accumulateToolCalls(deltas)).toMatchObject(expected);
  });

  it.each([
    ["broken JSON", '{"path": "auth.py"', /not valid JSON/],
    ["a JSON array", "[1,2]", /must be a JSON object/],
  ])("reports %s as a tool error for the model, not a crash", (_label, args, message) => {
    const [call] = accumulateToolCalls([[{ index: 0, id: "c1", function: { name: "lookup", arguments: args } }]]);
    expect(call?.arguments.ok).toBe(false);
    if (call && !call.arguments.ok) expect(call.arguments.error).toMatch(message);
    expect(call?.rawArguments).toBe(args);
  });

  it("ignores chunks without tool calls and deltas of no known shape", () => {
    expect(accumulateToolCalls([undefined, null, "x", [{ index: "zero" }], []])).toEqual([]);
  });
});
