import { describe, expect, it } from "vitest";
import type { ChatMessage } from "./agent-conversation.ts";
import { selectsForRerun } from "./rerun-request.ts";
import {
  appendMcpCalls,
  boundMessages,
  toTranscriptMessages,
  TRANSCRIPT_MAX_MCP_CALLS,
  TRANSCRIPT_MAX_MESSAGES,
  TRANSCRIPT_MESSAGE_CHARS,
} from "./task-transcript.ts";

const user = (content: string): ChatMessage => ({ role: "user", content });

describe("toTranscriptMessages", () => {
  it.each([
    {
      name: "a single-turn task: system, prompt, answer",
      input: { system: "be brief", prompt: "hi", kept: null, output: "hello" },
      roles: ["system", "user", "assistant"],
    },
    { name: "no system prompt, no answer yet", input: { system: null, prompt: "hi", kept: null, output: null }, roles: ["user"] },
    {
      name: "a kept conversation that already ends with the answer is not repeated",
      input: { system: null, prompt: "hi", kept: [user("hi"), { role: "assistant" as const, content: "done" }], output: "done" },
      roles: ["user", "assistant"],
    },
    {
      name: "a kept conversation with tool calls gets the final answer appended",
      input: {
        system: null,
        prompt: "hi",
        kept: [
          user("hi"),
          {
            role: "assistant" as const,
            content: null,
            tool_calls: [{ id: "c1", type: "function" as const, function: { name: "http_fetch", arguments: "{}" } }],
          },
          { role: "tool" as const, tool_call_id: "c1", content: "page" },
        ],
        output: "answer",
      },
      roles: ["user", "assistant", "tool", "assistant"],
    },
  ])("$name", ({ input, roles }) => {
    expect(toTranscriptMessages(input).messages.map((m) => m.role)).toEqual(roles);
  });
});

describe("appendMcpCalls", () => {
  const call = (n: number) => ({ tool_call_id: `c${n}`, attempt: 1, turn: 1, server: "code", tool: "search_code", latency_ms: n, bytes: n, error: null });
  it.each([
    { kept: 0, added: 1, first: "c0", length: 1 },
    { kept: 63, added: 1, first: "c0", length: 64 },
    { kept: 64, added: 2, first: "c2", length: 64 },
    { kept: 10, added: 70, first: "c16", length: 64 },
  ])("keeps the most recent $length of $kept kept and $added added", ({ kept, added, first, length }) => {
    const all = Array.from({ length: kept + added }, (_, i) => call(i));
    const result = appendMcpCalls(all.slice(0, kept), all.slice(kept));
    expect(result).toHaveLength(Math.min(length, TRANSCRIPT_MAX_MCP_CALLS));
    expect(result[0]?.tool_call_id).toBe(first);
    expect(result.at(-1)?.tool_call_id).toBe(`c${kept + added - 1}`);
  });
});

describe("boundMessages", () => {
  it("cuts long content and marks it", () => {
    const { messages, truncated } = boundMessages([user("x".repeat(TRANSCRIPT_MESSAGE_CHARS + 10))]);
    expect(truncated).toBe(true);
    expect(messages[0]?.content?.startsWith("x".repeat(TRANSCRIPT_MESSAGE_CHARS))).toBe(true);
    expect(messages[0]?.content).toContain("10 more characters not kept");
  });

  it("keeps the first two and the latest messages of a long loop", () => {
    const all = Array.from({ length: 100 }, (_, i) => user(`m${i}`));
    const { messages, truncated } = boundMessages(all);
    expect(truncated).toBe(true);
    expect(messages).toHaveLength(TRANSCRIPT_MAX_MESSAGES);
    expect(messages.slice(0, 3).map((m) => m.content)).toEqual(["m0", "m1", `m${100 - TRANSCRIPT_MAX_MESSAGES + 2}`]);
    expect(messages.at(-1)?.content).toBe("m99");
  });

  it("leaves a short conversation as it is", () => {
    expect(boundMessages([user("a")])).toEqual({ messages: [user("a")], truncated: false });
  });
});

describe("selectsForRerun", () => {
  it.each([
    ["failed", "failed", true],
    ["failed", "cancelled", false],
    ["failed", "succeeded", false],
    ["not_succeeded", "failed", true],
    ["not_succeeded", "cancelled", true],
    ["not_succeeded", "skipped_budget", true],
    ["not_succeeded", "skipped", true],
    ["not_succeeded", "succeeded", false],
  ] as const)("%s takes a %s task: %s", (selection, state, expected) => {
    expect(selectsForRerun(selection, state)).toBe(expected);
  });
});
