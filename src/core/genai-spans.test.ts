import { describe, expect, it } from "vitest";
import { toAttemptSpan, type AttemptSpanInput, toChatSpan, toProviderName, toSwarmSpan, toToolSpan, type ChatSpanInput } from "./genai-spans.ts";
import type { CallRecord } from "./swarm-contract.ts";
import { SPAN_KIND } from "./trace-span.ts";

const PLACE = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", parentSpanId: "1111111111111111" };
const USAGE = { prompt_tokens: 120, cached_tokens: 20, completion_tokens: 30, reasoning_tokens: 0, total_tokens: 150 };
const OK_CALL: CallRecord = {
  turn: 1,
  model: "mock-1",
  usage: USAGE,
  latencyMs: 250,
  ttfbMs: 40,
  status: "ok",
  errorClass: null,
  startedAt: 1_700_000_000_000,
};

function chat(overrides: Partial<ChatSpanInput>): ChatSpanInput {
  return {
    place: PLACE,
    swarmId: "sw_a",
    taskId: "t-1",
    attempt: 2,
    call: OK_CALL,
    provider: "openai",
    upstreamModel: "gpt-4.1-mini-2025",
    finishReason: "stop",
    costUsd: 0.000_024,
    maxOutputTokens: 64,
    content: null,
    ...overrides,
  };
}

describe("toChatSpan", () => {
  it("a call that answered: name, kind, timing and the GenAI attributes", () => {
    const span = toChatSpan(chat({}));
    expect(span).toEqual({
      ...PLACE,
      name: "chat mock-1",
      kind: SPAN_KIND.client,
      startMs: 1_700_000_000_000,
      endMs: 1_700_000_000_250,
      attributes: {
        "edgeswarm.swarm_id": "sw_a",
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "mock-1",
        "gen_ai.response.model": "gpt-4.1-mini-2025",
        "gen_ai.request.max_tokens": 64,
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        "gen_ai.usage.cache_read.input_tokens": 20,
        "gen_ai.usage.cost": 0.000_024,
        "gen_ai.response.finish_reasons": ["stop"],
        "edgeswarm.task_id": "t-1",
        "edgeswarm.attempt": 2,
        "edgeswarm.turn": 1,
        "edgeswarm.call_id": "sw_a:t-1:2:1",
        "edgeswarm.ttfb_ms": 40,
      },
      status: { code: 0 },
    });
  });

  it.each<[string, Partial<ChatSpanInput>, Record<string, unknown>, string[]]>([
    [
      "a failed call has error.type and an error status",
      { call: { ...OK_CALL, status: "error", errorClass: "rate_limited", usage: null }, finishReason: null, costUsd: null },
      { "error.type": "rate_limited" },
      ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cost", "gen_ai.response.finish_reasons"],
    ],
    ["an error without a class is _OTHER", { call: { ...OK_CALL, status: "error", errorClass: null } }, { "error.type": "_OTHER" }, []],
    ["an unpriced model has no cost", { costUsd: null }, {}, ["gen_ai.usage.cost"]],
    ["no content by default", {}, {}, ["gen_ai.input.messages", "gen_ai.output.messages"]],
    [
      "content when opted in",
      { content: { input: [{ role: "user", content: "hi" }], output: "hello" } },
      {
        "gen_ai.input.messages": JSON.stringify([{ role: "user", content: "hi" }]),
        "gen_ai.output.messages": JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: "hello" }] }]),
      },
      [],
    ],
  ])("%s", (_name, overrides, present, absent) => {
    const span = toChatSpan(chat(overrides));
    expect(span.attributes).toMatchObject(present);
    for (const key of absent) expect(span.attributes).not.toHaveProperty(key);
    expect(span.status.code).toBe("error.type" in present ? 2 : 0);
    expect(span.attributes["edgeswarm.swarm_id"]).toBe("sw_a");
  });
});

describe("toAttemptSpan", () => {
  const base: AttemptSpanInput = {
    place: PLACE,
    swarmId: "sw_a",
    taskId: "t-1",
    attempt: 2,
    startMs: 10,
    endMs: 20,
    outcome: "succeeded",
    errorType: null,
    previous: null,
  };

  it.each<[string, Partial<AttemptSpanInput>, (span: ReturnType<typeof toAttemptSpan>) => void]>([
    [
      "names the task and is an invoke_agent operation",
      {},
      (span) => {
        expect(span.name).toBe("invoke_agent t-1");
        expect(span.kind).toBe(SPAN_KIND.internal);
        expect(span.attributes).toMatchObject({
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.agent.name": "t-1",
          "edgeswarm.swarm_id": "sw_a",
          "edgeswarm.attempt": 2,
        });
        expect(span.links).toBeUndefined();
      },
    ],
    [
      "a retry links to the attempt before it",
      { previous: { traceId: PLACE.traceId, spanId: "2222222222222222" } },
      (span) => expect(span.links).toEqual([{ traceId: PLACE.traceId, spanId: "2222222222222222", attributes: { "edgeswarm.link": "previous_attempt" } }]),
    ],
    [
      "a failed attempt carries error.type",
      { outcome: "failed", errorType: "upstream_timeout" },
      (span) => {
        expect(span.attributes["error.type"]).toBe("upstream_timeout");
        expect(span.status).toEqual({ code: 2, message: "upstream_timeout" });
      },
    ],
  ])("%s", (_name, overrides, check) => {
    check(toAttemptSpan({ ...base, ...overrides }));
  });
});

describe("toToolSpan and toSwarmSpan", () => {
  it("a tool call", () => {
    const span = toToolSpan({
      place: PLACE,
      swarmId: "sw_a",
      taskId: "t-1",
      tool: "http_fetch",
      callId: "c1",
      startMs: 1,
      endMs: 5,
      failed: false,
      content: null,
    });
    expect(span.name).toBe("execute_tool http_fetch");
    expect(span.attributes).toEqual({
      "edgeswarm.swarm_id": "sw_a",
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "http_fetch",
      "gen_ai.tool.call.id": "c1",
      "gen_ai.tool.type": "function",
      "edgeswarm.task_id": "t-1",
    });
  });

  it("a failed tool call and its content when opted in", () => {
    const span = toToolSpan({
      place: PLACE,
      swarmId: "sw_a",
      taskId: "t-1",
      tool: "calc",
      callId: "c1",
      startMs: 1,
      endMs: 5,
      failed: true,
      content: { arguments: "{}", result: "x" },
    });
    expect(span.attributes).toMatchObject({ "error.type": "tool_error", "gen_ai.tool.call.arguments": "{}", "gen_ai.tool.call.result": "x" });
    expect(span.status.code).toBe(2);
  });

  const mcp = { server: "code", tool: "search_code", address: "mcp.example.com", port: 443, protocolVersion: "2026-07-28", bytes: 120, errorType: null };
  it.each([
    { why: "an answered MCP call", failed: false, mcp, errorType: null },
    { why: "a result with isError", failed: true, mcp: { ...mcp, errorType: "tool_error" }, errorType: "tool_error" },
    { why: "a timeout", failed: true, mcp: { ...mcp, errorType: "timeout" }, errorType: "timeout" },
    { why: "an HTTP 401", failed: true, mcp: { ...mcp, errorType: "401" }, errorType: "401" },
    { why: "a JSON-RPC error", failed: true, mcp: { ...mcp, errorType: "-32603" }, errorType: "-32603" },
    {
      why: "a call before any session (no protocol version)",
      failed: true,
      mcp: { ...mcp, protocolVersion: null, errorType: "unreachable" },
      errorType: "unreachable",
    },
  ])("$why: the execute_tool span gets the MCP client attributes and its error.type", ({ failed, mcp: input, errorType }) => {
    const span = toToolSpan({
      place: PLACE,
      swarmId: "sw_a",
      taskId: "t-1",
      tool: "mcp__code__search_code",
      callId: "c1",
      startMs: 1,
      endMs: 5,
      failed,
      content: null,
      mcp: input,
    });
    expect(span.name).toBe("execute_tool mcp__code__search_code");
    expect(span.attributes).toEqual({
      "edgeswarm.swarm_id": "sw_a",
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "mcp__code__search_code",
      "gen_ai.tool.call.id": "c1",
      "gen_ai.tool.type": "function",
      "edgeswarm.task_id": "t-1",
      "mcp.method.name": "tools/call",
      "server.address": "mcp.example.com",
      "server.port": 443,
      "network.transport": "tcp",
      "network.protocol.name": "http",
      ...(input.protocolVersion === null ? {} : { "mcp.protocol.version": input.protocolVersion }),
      "edgeswarm.mcp.server": "code",
      "edgeswarm.mcp.tool": "search_code",
      "edgeswarm.mcp.result_bytes": 120,
      ...(errorType === null ? {} : { "error.type": errorType }),
    });
    expect(span.status).toEqual(errorType === null ? { code: 0 } : { code: 2, message: errorType });
  });

  it("the root is the swarm's, with no parent", () => {
    const span = toSwarmSpan({
      place: { ...PLACE, parentSpanId: null },
      swarmId: "sw_a",
      name: "demo",
      startMs: 1,
      endMs: 9,
      state: "done",
      tasks: 3,
      costUsd: 0.5,
    });
    expect(span).toMatchObject({
      name: "swarm demo",
      parentSpanId: null,
      attributes: { "edgeswarm.swarm_id": "sw_a", "edgeswarm.swarm.tasks": 3, "gen_ai.usage.cost": 0.5 },
    });
  });
});

describe("toProviderName", () => {
  it.each([
    ["https://api.openai.com/v1", "openai"],
    ["https://myres.openai.azure.com/openai/deployments/x", "azure.ai.openai"],
    ["https://api.anthropic.com/v1/", "anthropic"],
    ["https://generativelanguage.googleapis.com/v1beta/openai/", "gcp.gemini"],
    ["https://api.deepseek.com", "deepseek"],
    ["https://api.groq.com/openai/v1", "groq"],
    ["https://api.mistral.ai/v1", "mistral_ai"],
    ["https://api.x.ai/v1", "x_ai"],
    ["https://user:pw@api.openai.com:443/v1", "openai"],
    ["http://127.0.0.1:8788/v1", "openai"],
    ["not a url", "openai"],
  ])("%s → %s", (url, name) => {
    expect(toProviderName(url)).toBe(name);
  });
});
