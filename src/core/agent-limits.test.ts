// Model calls one attempt of a sub-task may make: what budget reservations and estimates count on.
import { describe, expect, it } from "vitest";
import { callsPerAttempt } from "./agent-limits.ts";

describe("callsPerAttempt", () => {
  const limits = { max_turns: 6 };
  const tool = "scratchpad";
  it.each([
    { case: "no tools field, no response_format", spec: { limits }, want: 1 },
    { case: "an empty tool list", spec: { tools: [], limits }, want: 1 },
    { case: "tools: max_turns", spec: { tools: [tool], limits }, want: 6 },
    { case: "tools with max_turns 1", spec: { tools: [tool, "http_fetch"], limits: { max_turns: 1 } }, want: 1 },
    { case: "json_object adds a repair turn", spec: { response_format: { type: "json_object" }, limits }, want: 2 },
    { case: "json_schema adds a repair turn", spec: { response_format: { type: "json_schema" }, limits }, want: 2 },
    { case: "text adds nothing", spec: { response_format: { type: "text" }, limits }, want: 1 },
    { case: "null response_format adds nothing", spec: { response_format: null, limits }, want: 1 },
    { case: "undefined response_format adds nothing", spec: { tools: undefined, response_format: undefined, limits }, want: 1 },
    { case: "tools and json_schema", spec: { tools: [tool], response_format: { type: "json_schema" }, limits }, want: 7 },
    { case: "tools and json_object", spec: { tools: [tool], response_format: { type: "json_object" }, limits }, want: 7 },
    { case: "tools and text", spec: { tools: [tool], response_format: { type: "text" }, limits }, want: 6 },
  ])("$case → $want", ({ spec, want }) => {
    expect(callsPerAttempt(spec)).toBe(want);
  });
});
