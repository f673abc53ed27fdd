// An attempt's spans as a lane records them (task-trace.ts): its chat and invoke_agent spans are
// counted when the call and the attempt end and written when the recorder posts, from what they
// ended with; with content capture on a chat span is written at once, with the conversation as it
// was at the call.
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/agent-conversation.ts";
import { toAttemptSpan, toChatSpan } from "../../../src/core/genai-spans.ts";
import { fromOtlpProtobuf } from "../../../src/core/otlp-decoding.ts";
import type { TraceSettings } from "../../../src/core/otel-settings.ts";
import { costOfUsage, type PriceTable } from "../../../src/core/pricing.ts";
import type { CallRecord, ClaimedTask } from "../../../src/core/swarm-contract.ts";
import { toAttemptSpanId } from "../../../src/core/trace-context.ts";
import type { TraceSpan } from "../../../src/core/trace-span.ts";
import type { ModelCallResult } from "../../../src/model/model-client.ts";
import { createSpanRecorder } from "../../../src/telemetry/span-exporter.ts";
import { startTaskTrace, type LaneTracing } from "../task-trace.ts";

const PARENT = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", sampled: true };
const SWARM_ID = "sw_tasktrace00000000001";
const PRICES: PriceTable = { "mock-1": { input: 0.15, cached_input: 0.075, output: 0.6 } };
const ROUTE = { baseUrl: "https://api.openai.com/v1", upstreamModel: "mock-1-2026" };
const USAGE = { prompt_tokens: 41, completion_tokens: 32, cached_tokens: 0, reasoning_tokens: 0, total_tokens: 73 };

function task(attempt: number): ClaimedTask {
  return {
    taskId: "task-0007",
    attempt,
    prompt: "summarize item 7",
    model: "mock-1",
    timeoutS: 30,
    leaseUntil: 1_764_000_030_000,
    runUntil: 1_764_000_060_000,
    kind: "task",
    override: null,
    checkpoint: null,
  };
}

const CALL: CallRecord = {
  turn: 1,
  model: "mock-1",
  usage: USAGE,
  latencyMs: 201.5,
  ttfbMs: 12.25,
  status: "ok",
  errorClass: null,
  startedAt: 1_764_000_000_100,
};
const RESULT: ModelCallResult = {
  ok: true,
  text: "done",
  finishReason: "stop",
  usage: USAGE,
  toolCalls: [],
  ttfbMs: 12.25,
  latencyMs: 201.5,
  startedAt: CALL.startedAt,
};

function tracing(captureContent: boolean): { lane: LaneTracing; bodies: Uint8Array[] } {
  const bodies: Uint8Array[] = [];
  const settings: TraceSettings = {
    url: "http://127.0.0.1:9/v1/traces",
    headers: {},
    protocol: "http/protobuf",
    timeoutMs: 1_000,
    serviceName: "edgeswarm-agent",
    sampleRatio: 1,
    captureContent,
  };
  const spans = createSpanRecorder({
    settings,
    fetch: async (_input, init) => {
      bodies.push(init?.body as Uint8Array);
      return new Response(null, { status: 200 });
    },
  });
  return { lane: { spans, captureContent, prices: PRICES }, bodies };
}

function spansOf(bodies: Uint8Array[]): TraceSpan[] {
  return bodies.flatMap((body) => {
    const read = fromOtlpProtobuf(body);
    if (!read.ok) throw new Error(read.error);
    return read.value.flatMap((batch) => batch.spans);
  });
}

/** The chat span toChatSpan makes of CALL (its own id is random: taken from the span). */
function expectedChat(spanId: string, attempt: number, content: { input: readonly ChatMessage[]; output: string | null } | null): TraceSpan {
  return toChatSpan({
    place: { traceId: PARENT.traceId, spanId, parentSpanId: toAttemptSpanId(PARENT.traceId, "task-0007", attempt) },
    swarmId: SWARM_ID,
    taskId: "task-0007",
    attempt,
    call: CALL,
    provider: "openai",
    upstreamModel: ROUTE.upstreamModel,
    finishReason: "stop",
    costUsd: costOfUsage(USAGE, PRICES["mock-1"] ?? { input: 0, cached_input: 0, output: 0 }),
    maxOutputTokens: 64,
    content,
  });
}

describe("an attempt's spans", () => {
  it("chat and invoke_agent are counted at once and written at the post, from what the call and the attempt ended with", async () => {
    const { lane, bodies } = tracing(false);
    const trace = startTaskTrace(lane, PARENT, SWARM_ID, task(2), 1_764_000_000_000);
    trace.chat(CALL, RESULT, ROUTE, { messages: [{ role: "user", content: "summarize item 7" }], maxOutputTokens: 64 });
    trace.end(
      {
        taskId: "task-0007",
        attempt: 2,
        outcome: { kind: "failed", class: "upstream_timeout", message: "slow", retryable: true, retryAfterMs: null },
        calls: [CALL],
      },
      1_764_000_000_400,
    );
    expect(lane.spans.tally).toEqual({ recorded: 2, exported: 0, dropped: 0, failedPosts: 0 });
    await lane.spans.flush();
    const [chat, attempt] = spansOf(bodies);
    expect(chat).toEqual(expectedChat(chat?.spanId ?? "", 2, null));
    expect(attempt).toEqual(
      toAttemptSpan({
        place: { traceId: PARENT.traceId, spanId: toAttemptSpanId(PARENT.traceId, "task-0007", 2), parentSpanId: PARENT.spanId },
        swarmId: SWARM_ID,
        taskId: "task-0007",
        attempt: 2,
        startMs: 1_764_000_000_000,
        endMs: 1_764_000_000_400,
        outcome: "failed",
        errorType: "upstream_timeout",
        previous: { traceId: PARENT.traceId, spanId: toAttemptSpanId(PARENT.traceId, "task-0007", 1) },
      }),
    );
    expect(lane.spans.tally).toEqual({ recorded: 2, exported: 2, dropped: 0, failedPosts: 0 });
  });

  it("a call of an attempt that never ends (its task threw) still has its chat span", async () => {
    const { lane, bodies } = tracing(false);
    startTaskTrace(lane, PARENT, SWARM_ID, task(1), 1_764_000_000_000).chat(CALL, RESULT, ROUTE, { messages: [], maxOutputTokens: 64 });
    await lane.spans.flush();
    const spans = spansOf(bodies);
    expect(spans).toEqual([expectedChat(spans[0]?.spanId ?? "", 1, null)]);
  });

  it("content capture on: the chat span holds the conversation as it was at the call, not as it grew after", async () => {
    const { lane, bodies } = tracing(true);
    const trace = startTaskTrace(lane, PARENT, SWARM_ID, task(1), 1_764_000_000_000);
    const messages: ChatMessage[] = [{ role: "user", content: "summarize item 7" }];
    trace.chat(CALL, RESULT, ROUTE, { messages, maxOutputTokens: 64 });
    messages.push({ role: "assistant", content: "a later turn" });
    await lane.spans.flush();
    const [chat] = spansOf(bodies);
    expect(chat).toEqual(expectedChat(chat?.spanId ?? "", 1, { input: [{ role: "user", content: "summarize item 7" }], output: "done" }));
  });
});
