import { describe, expect, it } from "vitest";
import { checkBatchLine, parseLineRef, toChatCompletion, toErrorLine, toLineRef, toOutputLine, toPassthroughBody, type LineRules } from "./batch-line.ts";

const rules: LineRules = { endpoint: "/v1/chat/completions", modelOverride: null, isAllowedModel: (m) => m !== "banned" };
const line = (over: Record<string, unknown> = {}, body: Record<string, unknown> = {}) =>
  JSON.stringify({
    custom_id: "r1",
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: "m", messages: [{ role: "user", content: "hi" }], ...body },
    ...over,
  });

describe("checkBatchLine", () => {
  it.each([
    ["not JSON", "{", "invalid_json_line", null],
    ["an array", "[]", "invalid_request", null],
    [
      "no custom_id",
      JSON.stringify({ method: "POST", url: "/v1/chat/completions", body: { model: "m", messages: [{ role: "user" }] } }),
      "invalid_request",
      "custom_id",
    ],
    ["GET", line({ method: "GET" }), "invalid_request", "method"],
    ["another url", line({ url: "/v1/embeddings" }), "invalid_url", "url"],
    ["no messages", line({}, { messages: [] }), "invalid_request", "body.messages"],
    ["no model", line({}, { model: undefined }), "invalid_request", "body.model"],
    ["a model not served", line({}, { model: "banned" }), "model_not_found", "body.model"],
    ["an unknown top-level field", line({ extra: 1 }), "invalid_request", null],
  ])("refuses %s", (_case, text, code, param) => {
    const checked = checkBatchLine(text, 7, rules, new Set());
    expect(checked).toMatchObject({ ok: false, error: { code, line: 7, param } });
  });

  it("refuses a duplicate custom_id at its second occurrence, and keeps the first", () => {
    const seen = new Set<string>();
    expect(checkBatchLine(line(), 1, rules, seen).ok).toBe(true);
    expect(checkBatchLine(line(), 2, rules, seen)).toMatchObject({ ok: false, error: { code: "duplicate_custom_id", line: 2 } });
  });

  it("takes the override's model over the line's, and the output limit from max_completion_tokens or max_tokens", () => {
    expect(checkBatchLine(line({}, { model: "banned", max_tokens: 9 }), 1, { ...rules, modelOverride: "m2" }, new Set())).toEqual({
      ok: true,
      value: { customId: "r1", model: "m2", maxTokens: 9 },
    });
    expect(checkBatchLine(line({}, { max_completion_tokens: 5, max_tokens: 9 }), 1, rules, new Set())).toMatchObject({ value: { maxTokens: 5 } });
  });
});

describe("line references and bodies", () => {
  it("round-trips a line's range, and refuses what is not one", () => {
    expect(parseLineRef(toLineRef({ offset: 123, length: 45 }))).toEqual({ offset: 123, length: 45 });
    for (const bad of ["", "1", "a:b", "-1:2", "1:2:3"]) expect(parseLineRef(bad)).toBeNull();
  });

  it("passes every body field through but the model and streaming, which the engine sets", () => {
    const body = {
      model: "m",
      messages: [{ role: "user" }],
      temperature: 0.1,
      tools: [{ type: "function" }],
      response_format: { type: "json_object" },
      stream: false,
      stream_options: {},
    };
    expect(toPassthroughBody(body)).toEqual({
      messages: [{ role: "user" }],
      temperature: 0.1,
      tools: [{ type: "function" }],
      response_format: { type: "json_object" },
    });
  });

  it("builds a chat.completion with the upstream's usage, tool calls included", () => {
    const usage = { prompt_tokens: 10, cached_tokens: 2, completion_tokens: 5, reasoning_tokens: 1, total_tokens: 15 };
    const completion = toChatCompletion({
      id: "chatcmpl-1",
      created: 100,
      model: "m",
      text: "",
      finishReason: "tool_calls",
      toolCalls: [{ id: "c1", name: "f", rawArguments: "{}", arguments: { ok: true, value: {} } }],
      usage,
    });
    expect(completion).toEqual({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 100,
      model: "m",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: null, refusal: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
          logprobs: null,
          finish_reason: "tool_calls",
        },
      ],
      usage: {
        prompt_tokens: 10,
        completion_tokens: 5,
        total_tokens: 15,
        prompt_tokens_details: { cached_tokens: 2 },
        completion_tokens_details: { reasoning_tokens: 1 },
      },
    });
  });

  it("writes output and error lines as OpenAI's, one JSON object a line", () => {
    expect(JSON.parse(toOutputLine({ id: "b1", customId: "c", requestId: "r", body: { x: 1 } }))).toEqual({
      id: "b1",
      custom_id: "c",
      response: { status_code: 200, request_id: "r", body: { x: 1 } },
      error: null,
    });
    const error = toErrorLine({ id: "b2", customId: "c2", code: "batch_cancelled", message: "m" });
    expect(error.endsWith("\n")).toBe(true);
    expect(JSON.parse(error)).toEqual({ id: "b2", custom_id: "c2", response: null, error: { code: "batch_cancelled", message: "m" } });
  });
});
