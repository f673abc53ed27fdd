// One sub-agent's conversation: how it starts, survives a checkpoint, decides its next turn, and
// shapes the tool-call messages every OpenAI-compatible upstream must accept.
import { describe, expect, it } from "vitest";
import {
  admitToolCalls,
  estimateConversationTokens,
  fromCheckpoint,
  nextTurn,
  startConversation,
  toAssistantToolMessage,
  toCheckpoint,
  toCheckpointMcpCalls,
  holdsOnlyFirstAnswer,
  toToolError,
  toToolMessage,
  withUniqueCallIds,
  pendingToolCalls,
} from "./agent-conversation.ts";
import type { AgentState, ChatMessage } from "./agent-conversation.ts";
import { MAX_TOOL_RESULT_CHARS } from "./agent-limits.ts";
import { estimatePromptTokens } from "./estimate-swarm.ts";
import type { AgentCheckpoint } from "./swarm-contract.ts";
import type { ToolCall } from "./tool-calls.ts";

function toolCall(id: string, name = "lookup", rawArguments = '{"q":"x"}'): ToolCall {
  return { id, name, rawArguments, arguments: { ok: true, value: rawArguments === "" ? {} : (JSON.parse(rawArguments) as Record<string, unknown>) } };
}

function assistantWith(...ids: string[]): ChatMessage {
  return { role: "assistant", content: null, tool_calls: ids.map((id) => ({ id, type: "function", function: { name: "lookup", arguments: "{}" } })) };
}

function state(overrides: Partial<AgentState> = {}): AgentState {
  return { ...startConversation(null, "go"), ...overrides };
}

describe("startConversation", () => {
  it.each([
    {
      system: "You are terse.",
      prompt: "Sum 2+2",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Sum 2+2" },
      ],
    },
    { system: null, prompt: "Sum 2+2", messages: [{ role: "user", content: "Sum 2+2" }] },
    // An empty system prompt is still a system message: only null means "none".
    {
      system: "",
      prompt: "p",
      messages: [
        { role: "system", content: "" },
        { role: "user", content: "p" },
      ],
    },
  ])("system $system → $messages.length message(s), no turns used", ({ system, prompt, messages }) => {
    expect(startConversation(system, prompt)).toEqual({ messages, turns: 0, toolCalls: 0, repairs: 0 });
  });
});

describe("checkpoints", () => {
  const midway: AgentState = {
    messages: [
      { role: "system", content: "sys" },
      { role: "user", content: "find the price" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "functions.lookup:0", type: "function", function: { name: "lookup", arguments: '{"sku":"A-1"}' } }],
      },
      { role: "tool", tool_call_id: "functions.lookup:0", content: '{"price":3}' },
      {
        role: "assistant",
        content: "Let me check once more.",
        tool_calls: [{ id: "call_2_0", type: "function", function: { name: "lookup", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "call_2_0", content: "naïve ✓ 😀" },
    ],
    turns: 2,
    toolCalls: 2,
    repairs: 0,
  };

  it("round-trips a conversation through its checkpoint", () => {
    const checkpoint = toCheckpoint(midway);
    expect(checkpoint).toEqual({ step: midway.messages.length, turns: 2, toolCalls: 2, repairs: 0, messages_json: JSON.stringify(midway.messages) });
    expect(fromCheckpoint(checkpoint)).toEqual(midway);
  });

  it("round-trips a fresh conversation and the repair counter", () => {
    const fresh: AgentState = { ...startConversation("s", "p"), turns: 8, toolCalls: 16, repairs: 1 };
    expect(fromCheckpoint(toCheckpoint(fresh))).toEqual(fresh);
  });

  const mcpCall = { tool_call_id: "call_2_0", attempt: 1, turn: 2, server: "code", tool: "search_code", latency_ms: 51, bytes: 77, error: null };

  it("round-trips the MCP calls a conversation made; a checkpoint without any has no mcp_calls_json", () => {
    const withCalls: AgentState = { ...midway, mcpCalls: [mcpCall, { ...mcpCall, tool_call_id: "c9", error: "isError" }] };
    const checkpoint = toCheckpoint(withCalls);
    expect(JSON.parse(checkpoint.mcp_calls_json ?? "null")).toEqual(withCalls.mcpCalls);
    expect(fromCheckpoint(checkpoint)).toEqual(withCalls);
    expect(toCheckpoint({ ...midway, mcpCalls: [] })).not.toHaveProperty("mcp_calls_json");
  });

  it.each([
    { why: "not JSON", json: "[{" },
    { why: "a call without its server", json: '[{"tool_call_id":"a","attempt":1,"turn":1,"tool":"t","latency_ms":1,"bytes":1,"error":null}]' },
    { why: "an object, not an array", json: "{}" },
  ])("reads MCP calls that are $why as none; the conversation still resumes", ({ json }) => {
    const state = fromCheckpoint({ ...toCheckpoint(midway), mcp_calls_json: json });
    expect(state).toEqual(midway);
    expect(toCheckpointMcpCalls({ ...toCheckpoint(midway), mcp_calls_json: json })).toEqual([]);
  });

  it.each([
    ["an answer", { text: "42", finishReason: "stop", toolCallsOnly: false }],
    ["an answer cut at max_output_tokens", { text: "4", finishReason: "length", toolCallsOnly: false }],
    ["tool calls only, with no text, on a turn offered no tools", { text: "", finishReason: null, toolCallsOnly: true }],
  ])("round-trips the last turn's answer (%s); a checkpoint before any has no answer_json", (_label, answer) => {
    const answered: AgentState = { ...startConversation("s", "p"), turns: 1, answer };
    const checkpoint = toCheckpoint(answered);
    expect(JSON.parse(checkpoint.answer_json ?? "null")).toEqual(answer);
    expect(fromCheckpoint(checkpoint)).toEqual(answered);
    expect(toCheckpoint({ ...answered, answer: undefined })).not.toHaveProperty("answer_json");
  });

  const answeredCheckpoint = (over: Partial<AgentState> = {}): AgentCheckpoint =>
    toCheckpoint({ ...startConversation("s", "p"), turns: 1, answer: { text: "42", finishReason: "stop", toolCallsOnly: false }, ...over });
  it.each([
    ["a first turn's answer", answeredCheckpoint(), true],
    ["an answer after tool turns", answeredCheckpoint({ turns: 3, toolCalls: 2 }), false],
    ["an answer after a repair turn", answeredCheckpoint({ turns: 2, repairs: 1 }), false],
    ["an answer whose conversation made MCP calls", answeredCheckpoint({ mcpCalls: [mcpCall] }), false],
    ["a first turn's checkpoint with no answer", answeredCheckpoint({ answer: undefined }), false],
  ])("holds only a first turn's answer: %s → %s", (_label, checkpoint, expected) => {
    expect(holdsOnlyFirstAnswer(checkpoint)).toBe(expected);
  });

  it.each([
    { why: "not JSON", json: '{"text":' },
    { why: "an answer without its text", json: '{"finishReason":"stop","toolCallsOnly":false}' },
    { why: "an array", json: "[]" },
  ])("refuses a checkpoint whose answer is $why (null: the task starts over, and pays for its answer again)", ({ json }) => {
    expect(fromCheckpoint({ ...toCheckpoint(midway), answer_json: json })).toBeNull();
  });

  const broken = (messages_json: string): AgentCheckpoint => ({ step: 2, turns: 1, toolCalls: 0, repairs: 0, messages_json });
  it.each([
    { why: "not JSON", json: '[{"role":"user","content":"hi"}' },
    { why: "empty text", json: "" },
    { why: "an object, not an array", json: '{"role":"user","content":"hi"}' },
    { why: "null", json: "null" },
    { why: "an empty array", json: "[]" },
    { why: "an unknown role", json: '[{"role":"developer","content":"hi"}]' },
    { why: "a role missing", json: '[{"content":"hi"}]' },
    { why: "a user message without content", json: '[{"role":"user"}]' },
    { why: "a tool message without tool_call_id", json: '[{"role":"user","content":"hi"},{"role":"tool","content":"r"}]' },
    { why: "an assistant message without content", json: '[{"role":"user","content":"hi"},{"role":"assistant"}]' },
    {
      why: "a tool call of another type",
      json: '[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"custom","function":{"name":"x","arguments":"{}"}}]}]',
    },
    { why: "a message that is a string", json: '["hi"]' },
  ])("refuses a checkpoint whose messages are $why (null: the task starts over)", ({ json }) => {
    expect(fromCheckpoint(broken(json))).toBeNull();
  });
});

describe("pendingToolCalls", () => {
  const asked: ChatMessage = {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "functions.lookup:0", type: "function", function: { name: "lookup", arguments: '{"sku":"A"}' } },
      { id: "call_1", type: "function", function: { name: "lookup", arguments: "{broken" } },
    ],
  };
  it.each([
    { case: "a fresh conversation", messages: [{ role: "user", content: "go" }] as ChatMessage[], want: [] },
    {
      case: "tools that already answered",
      messages: [
        { role: "user", content: "go" },
        asked,
        { role: "tool", tool_call_id: "functions.lookup:0", content: "r" },
        { role: "tool", tool_call_id: "call_1", content: "r" },
      ] as ChatMessage[],
      want: [],
    },
    {
      case: "a final answer",
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: "done" },
      ] as ChatMessage[],
      want: [],
    },
    {
      case: "a turn checkpointed before its tools ran",
      messages: [{ role: "user", content: "go" }, asked] as ChatMessage[],
      want: ["functions.lookup:0", "call_1"],
    },
  ])("$case", ({ messages, want }) => {
    expect(pendingToolCalls(messages).map((c) => c.id)).toEqual(want);
  });

  it("parses the stored arguments again (broken ones become the tool error they were)", () => {
    const [good, bad] = pendingToolCalls([{ role: "user", content: "go" }, asked]);
    expect(good?.arguments).toEqual({ ok: true, value: { sku: "A" } });
    expect(bad?.arguments.ok).toBe(false);
  });
});

describe("nextTurn", () => {
  const limits = { max_turns: 3, max_tool_calls: 5 };
  it.each([
    { case: "first turn", s: {}, hasTools: true, want: { turn: 1, offerTools: true } },
    { case: "a middle turn", s: { turns: 1 }, hasTools: true, want: { turn: 2, offerTools: true } },
    { case: "the last allowed turn asks for the final answer", s: { turns: 2 }, hasTools: true, want: { turn: 3, offerTools: false } },
    { case: "no tools in the spec", s: {}, hasTools: false, want: { turn: 1, offerTools: false } },
    { case: "one tool call left", s: { turns: 1, toolCalls: 4 }, hasTools: true, want: { turn: 2, offerTools: true } },
    { case: "max_tool_calls used", s: { turns: 1, toolCalls: 5 }, hasTools: true, want: { turn: 2, offerTools: false } },
    { case: "past max_tool_calls (a checkpoint from older limits)", s: { turns: 1, toolCalls: 9 }, hasTools: true, want: { turn: 2, offerTools: false } },
    { case: "turns spent", s: { turns: 3 }, hasTools: true, want: null },
    { case: "turns spent, no tools", s: { turns: 3 }, hasTools: false, want: null },
    { case: "the repair turn beyond max_turns", s: { turns: 3, repairs: 1 }, hasTools: true, want: { turn: 4, offerTools: false } },
    { case: "a repair before max_turns offers no tools", s: { turns: 1, repairs: 1 }, hasTools: true, want: { turn: 2, offerTools: false } },
    { case: "after the repair turn", s: { turns: 4, repairs: 1 }, hasTools: true, want: null },
  ])("$case", ({ s, hasTools, want }) => {
    expect(nextTurn(state(s), limits, hasTools)).toEqual(want);
  });

  it.each([
    { limits: { max_turns: 1, max_tool_calls: 16 }, want: { turn: 1, offerTools: false } },
    { limits: { max_turns: 8, max_tool_calls: 0 }, want: { turn: 1, offerTools: false } },
  ])("offers no tools at all with $limits", ({ limits: l, want }) => {
    expect(nextTurn(state(), l, true)).toEqual(want);
  });

  it("walks a tool-using task to its end: tools on turns 1..max_turns-1, then the answer, then one repair", () => {
    let s = state();
    const seen: ({ turn: number; offerTools: boolean } | null)[] = [];
    for (let i = 0; i < 6; i += 1) {
      const next = nextTurn(s, limits, true);
      seen.push(next);
      if (next === null) break;
      // After the last turn the structured output fails once and a repair is granted.
      s = { ...s, turns: next.turn, repairs: next.turn === 3 ? 1 : s.repairs };
    }
    expect(seen).toEqual([{ turn: 1, offerTools: true }, { turn: 2, offerTools: true }, { turn: 3, offerTools: false }, { turn: 4, offerTools: false }, null]);
  });
});

describe("toAssistantToolMessage", () => {
  it.each([
    { case: "OpenAI ids", id: "call_abc123", raw: '{"q":"x"}', args: '{"q":"x"}' },
    { case: "Kimi ids, echoed exactly", id: "functions.get_weather:0", raw: '{"city":"Paris"}', args: '{"city":"Paris"}' },
    { case: "generated ids (Gemini)", id: "call_0", raw: '{"a":1}', args: '{"a":1}' },
    { case: "empty arguments become {}", id: "call_1", raw: "", args: "{}" },
    { case: "arguments text kept byte for byte", id: "call_2", raw: '{ "q" : "naïve" }', args: '{ "q" : "naïve" }' },
  ])("$case", ({ id, raw, args }) => {
    const message = toAssistantToolMessage("", [toolCall(id, "get_weather", raw)]);
    expect(message).toEqual({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "get_weather", arguments: args } }] });
  });

  it("keeps the model's text, and every call in order", () => {
    const message = toAssistantToolMessage("Checking both.", [toolCall("functions.a:0", "a"), toolCall("functions.b:1", "b", "")]);
    expect(message).toEqual({
      role: "assistant",
      content: "Checking both.",
      tool_calls: [
        { id: "functions.a:0", type: "function", function: { name: "a", arguments: '{"q":"x"}' } },
        { id: "functions.b:1", type: "function", function: { name: "b", arguments: "{}" } },
      ],
    });
  });
});

describe("toToolMessage", () => {
  const note = (length: number) => `\n[cut: the result had ${length} characters]`;
  it.each([
    { case: "empty", content: "", want: "" },
    { case: "short", content: '{"price":3}', want: '{"price":3}' },
    { case: "exactly the limit", content: "x".repeat(MAX_TOOL_RESULT_CHARS), want: "x".repeat(MAX_TOOL_RESULT_CHARS) },
    { case: "one past the limit", content: "x".repeat(MAX_TOOL_RESULT_CHARS + 1), want: "x".repeat(MAX_TOOL_RESULT_CHARS) + note(MAX_TOOL_RESULT_CHARS + 1) },
    { case: "far past the limit", content: "ab".repeat(MAX_TOOL_RESULT_CHARS), want: "ab".repeat(MAX_TOOL_RESULT_CHARS / 2) + note(2 * MAX_TOOL_RESULT_CHARS) },
  ])("$case", ({ content, want }) => {
    expect(toToolMessage("functions.lookup:0", content)).toEqual({ role: "tool", tool_call_id: "functions.lookup:0", content: want });
  });
});

describe("toToolError", () => {
  it.each(["lookup failed: timeout", 'quotes " and \\ and\nnewlines', ""])("is JSON with the message under error: %j", (message) => {
    const text = toToolError(message);
    expect(JSON.parse(text)).toEqual({ error: message });
  });
});

describe("admitToolCalls", () => {
  it.each([
    { calls: ["a", "b", "c"], used: 0, max: 5, run: ["a", "b", "c"], refused: [] },
    { calls: ["a", "b", "c"], used: 2, max: 5, run: ["a", "b", "c"], refused: [] },
    { calls: ["a", "b", "c"], used: 3, max: 5, run: ["a", "b"], refused: ["c"] },
    { calls: ["a", "b", "c"], used: 4, max: 5, run: ["a"], refused: ["b", "c"] },
    { calls: ["a", "b", "c"], used: 5, max: 5, run: [], refused: ["a", "b", "c"] },
    { calls: ["a", "b", "c"], used: 9, max: 5, run: [], refused: ["a", "b", "c"] },
    { calls: ["a", "b"], used: 0, max: 0, run: [], refused: ["a", "b"] },
    { calls: [], used: 0, max: 5, run: [], refused: [] },
  ])("$calls with $used of $max used → run $run, refuse $refused", ({ calls, used, max, run, refused }) => {
    expect(admitToolCalls(calls, used, max)).toEqual({ run, refused });
  });
});

describe("withUniqueCallIds", () => {
  const ids = (calls: readonly ToolCall[]) => calls.map((c) => c.id);
  it.each([
    { case: "first turn: ids kept", history: [], turn: 1, sent: ["call_0", "call_1"], want: ["call_0", "call_1"] },
    { case: "Gemini repeats call_0 on turn 2", history: [assistantWith("call_0")], turn: 2, sent: ["call_0"], want: ["call_2_0"] },
    {
      case: "Gemini repeats call_0/call_1 on turn 3",
      history: [assistantWith("call_0", "call_1"), assistantWith("call_0")],
      turn: 3,
      sent: ["call_0", "call_1", "call_2"],
      want: ["call_3_0", "call_3_1", "call_2"],
    },
    { case: "ids the model sent are kept", history: [assistantWith("call_abc")], turn: 2, sent: ["call_def", "call_xyz"], want: ["call_def", "call_xyz"] },
    { case: "Kimi ids kept", history: [assistantWith("functions.lookup:0")], turn: 2, sent: ["functions.lookup:1"], want: ["functions.lookup:1"] },
    { case: "a duplicate within one turn", history: [], turn: 4, sent: ["dup", "dup", "other"], want: ["dup", "call_4_1", "other"] },
    {
      case: "a renamed id that the model itself already used",
      history: [assistantWith("call_0", "call_2_0")],
      turn: 2,
      sent: ["call_0"],
      want: ["call_2_0_1"],
    },
    {
      case: "a model-sent id shaped like a renamed one",
      history: [assistantWith("call_1")],
      turn: 2,
      sent: ["call_2_1", "call_1"],
      want: ["call_2_1", "call_2_1_1"],
    },
    {
      case: "only assistant messages count (tool messages echo them)",
      history: [{ role: "tool", tool_call_id: "call_0", content: "x" }],
      turn: 2,
      sent: ["call_0"],
      want: ["call_0"],
    },
  ] satisfies { case: string; history: ChatMessage[]; turn: number; sent: string[]; want: string[] }[])("$case", ({ history, turn, sent, want }) => {
    const messages: ChatMessage[] = [{ role: "user", content: "go" }, ...history];
    expect(
      ids(
        withUniqueCallIds(
          sent.map((id) => toolCall(id)),
          messages,
          turn,
        ),
      ),
    ).toEqual(want);
  });

  it("keeps everything but the id of a renamed call, and returns kept calls as they are", () => {
    const kept = toolCall("call_new", "a");
    const repeated = toolCall("call_0", "b", '{"n":2}');
    const [first, second] = withUniqueCallIds([kept, repeated], [assistantWith("call_0")], 5);
    expect(first).toBe(kept);
    expect(second).toEqual({ ...repeated, id: "call_5_1" });
    expect(repeated.id).toBe("call_0");
  });

  it("gives a Gemini conversation of many turns unique ids throughout", () => {
    const messages: ChatMessage[] = [{ role: "user", content: "go" }];
    for (let turn = 1; turn <= 6; turn += 1) {
      const calls = withUniqueCallIds([toolCall("call_0"), toolCall("call_1")], messages, turn);
      messages.push(toAssistantToolMessage("", calls));
      for (const call of calls) messages.push(toToolMessage(call.id, "ok"));
    }
    const all = messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));
    expect(all).toHaveLength(12);
    expect(new Set(all).size).toBe(12);
  });
});

describe("estimateConversationTokens", () => {
  const tools = [{ type: "function", function: { name: "lookup", description: "Look it up.", parameters: { type: "object", properties: {} } } }];
  const withCalls: ChatMessage = {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "functions.lookup:0", type: "function", function: { name: "lookup", arguments: '{"sku":"A-17"}' } }],
  };
  const callsTokens = Math.ceil(JSON.stringify(withCalls.role === "assistant" ? withCalls.tool_calls : []).length / 4);
  const toolsTokens = Math.ceil(JSON.stringify(tools).length / 4);
  const per = (text: string) => estimatePromptTokens(null, text);

  it.each([
    { case: "one user message", messages: [{ role: "user", content: "hello world" }], tools: null, want: per("hello world") },
    {
      case: "system + user",
      messages: [
        { role: "system", content: "s".repeat(9) },
        { role: "user", content: "u" },
      ],
      tools: null,
      want: per("s".repeat(9)) + per("u"),
    },
    {
      case: "system + user equals estimatePromptTokens(system, user)",
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "prompt" },
      ],
      tools: null,
      want: estimatePromptTokens("sys", "prompt"),
    },
    { case: "an empty tool list adds nothing", messages: [{ role: "user", content: "u" }], tools: [], want: per("u") },
    { case: "offered tools add their JSON / 4", messages: [{ role: "user", content: "u" }], tools, want: per("u") + toolsTokens },
    {
      case: "an assistant's tool calls add their JSON / 4, a null content counts as empty",
      messages: [{ role: "user", content: "u" }, withCalls, { role: "tool", tool_call_id: "functions.lookup:0", content: '{"price":3}' }],
      tools,
      want: per("u") + per("") + callsTokens + per('{"price":3}') + toolsTokens,
    },
    { case: "an assistant answer without tool calls", messages: [{ role: "assistant", content: "done" }], tools: null, want: per("done") },
  ] satisfies { case: string; messages: ChatMessage[]; tools: unknown[] | null; want: number }[])("$case", ({ messages, tools: offered, want }) => {
    expect(estimateConversationTokens(messages, offered)).toBe(want);
  });

  it("matches ceil(chars / 4) + 4 framing tokens per message", () => {
    expect(estimateConversationTokens([{ role: "user", content: "12345" }], null)).toBe(2 + 4);
  });
});
