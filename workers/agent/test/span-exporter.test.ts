// The span recorder's own paths that no collector can cause: a span or a body that cannot be
// written is dropped and counted, and nothing is posted or thrown (tracing never stops a swarm);
// deferred spans are counted when recorded and written at the post.
import { describe, expect, it } from "vitest";
import { toAttemptSpan, toChatSpan, type AttemptSpanInput, type ChatSpanInput } from "../../../src/core/genai-spans.ts";
import { toHexAttemptInput, toHexChatInput } from "../../../src/core/genai-span-encoding.ts";
import { fromOtlpJson, fromOtlpProtobuf } from "../../../src/core/otlp-decoding.ts";
import { toIdBytes } from "../../../src/core/trace-context.ts";
import { createSpanRecorder, SPANS_PER_POST, TRACE_SCOPE } from "../../../src/telemetry/span-exporter.ts";
import type { TraceSettings } from "../../../src/core/otel-settings.ts";
import { SPAN_KIND, type TraceSpan } from "../../../src/core/trace-span.ts";

const SPAN: TraceSpan = {
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  spanId: "00f067aa0ba902b7",
  parentSpanId: null,
  name: "chat mock-1",
  kind: SPAN_KIND.client,
  startMs: 1_764_000_000_123.456,
  endMs: 1_764_000_000_373.5,
  attributes: { "gen_ai.operation.name": "chat" },
  status: { code: 0 },
};

const PLACE = { traceId: toIdBytes(SPAN.traceId), spanId: toIdBytes("1111111111111111"), parentSpanId: toIdBytes(SPAN.spanId) };
const CHAT: ChatSpanInput<Uint8Array> = {
  place: PLACE,
  swarmId: "sw_a",
  taskId: "t-1",
  attempt: 2,
  call: { turn: 1, model: "mock-1", usage: null, latencyMs: 250, status: "error", errorClass: "rate_limited", startedAt: 1_764_000_000_000 },
  provider: "openai",
  upstreamModel: "mock-1",
  finishReason: null,
  costUsd: null,
  maxOutputTokens: 64,
  content: null,
};
const ATTEMPT: AttemptSpanInput<Uint8Array> = {
  place: { ...PLACE, spanId: toIdBytes(SPAN.spanId), parentSpanId: null },
  swarmId: "sw_a",
  taskId: "t-1",
  attempt: 2,
  startMs: 1_764_000_000_000,
  endMs: 1_764_000_000_300,
  outcome: "failed",
  errorType: "rate_limited",
  previous: { traceId: PLACE.traceId, spanId: toIdBytes("2222222222222222") },
};

function settings(protocol: TraceSettings["protocol"]): TraceSettings {
  return {
    url: "http://127.0.0.1:9/v1/traces",
    headers: {},
    protocol,
    timeoutMs: 1_000,
    serviceName: "edgeswarm-agent",
    sampleRatio: 1,
    captureContent: false,
  };
}

/** A recorder whose posts answer 200 at once, and the bodies it posted, in order. */
function recorderKeepingBodies(protocol: TraceSettings["protocol"]): { recorder: ReturnType<typeof createSpanRecorder>; bodies: Array<Uint8Array | string> } {
  const bodies: Array<Uint8Array | string> = [];
  const recorder = createSpanRecorder({
    settings: settings(protocol),
    fetch: async (_input, init) => {
      bodies.push(init?.body as Uint8Array | string);
      return new Response(null, { status: 200 });
    },
  });
  return { recorder, bodies };
}

/** The spans of a posted body, protobuf or JSON. */
function readBody(body: Uint8Array | string | undefined): ReturnType<typeof fromOtlpProtobuf> {
  return typeof body === "string" ? fromOtlpJson(body) : fromOtlpProtobuf(body ?? new Uint8Array(0));
}

describe("span recorder", () => {
  it("http/json: a body that cannot be written (a time that is not a number) is dropped and counted, and nothing is posted", async () => {
    const posts: unknown[] = [];
    const recorder = createSpanRecorder({
      settings: settings("http/json"),
      fetch: async (input) => {
        posts.push(input);
        return new Response(null, { status: 200 });
      },
    });
    recorder.record({ ...SPAN, startMs: Number.NaN });
    await recorder.flush();
    expect(posts).toEqual([]);
    expect(recorder.tally).toEqual({ recorded: 1, exported: 0, dropped: 1, failedPosts: 1 });
    // The next span goes out in a body of its own.
    recorder.record(SPAN);
    await recorder.flush();
    expect(posts).toHaveLength(1);
    expect(recorder.tally).toEqual({ recorded: 2, exported: 1, dropped: 1, failedPosts: 1 });
  });

  for (const protocol of ["http/protobuf", "http/json"] as const) {
    it(`${protocol}: recordChat and recordAttempt post toChatSpan's and toAttemptSpan's spans`, async () => {
      const { recorder, bodies } = recorderKeepingBodies(protocol);
      recorder.recordChat(CHAT);
      recorder.recordAttempt(ATTEMPT);
      await recorder.flush();
      const [body] = bodies;
      const read = readBody(body);
      expect(bodies).toHaveLength(1);
      expect(read).toEqual({
        ok: true,
        value: [
          {
            resource: { "service.name": "edgeswarm-agent", "telemetry.sdk.name": "edgeswarm", "telemetry.sdk.language": "webjs" },
            scope: TRACE_SCOPE,
            spans: [toChatSpan(toHexChatInput(CHAT)), toAttemptSpan(toHexAttemptInput(ATTEMPT))],
          },
        ],
      });
      expect(recorder.tally).toEqual({ recorded: 2, exported: 2, dropped: 0, failedPosts: 0 });
    });
  }

  it("protobuf: a span that cannot be written (an id that is not bytes) is dropped and counted, and the others go out", async () => {
    const { recorder, bodies } = recorderKeepingBodies("http/protobuf");
    recorder.recordAttempt({ ...ATTEMPT, previous: { traceId: PLACE.traceId, spanId: null as unknown as Uint8Array } });
    recorder.recordChat(CHAT);
    await recorder.flush();
    const read = readBody(bodies[0]);
    expect(read.ok && read.value[0]?.spans).toEqual([toChatSpan(toHexChatInput(CHAT))]);
    expect(recorder.tally).toEqual({ recorded: 2, exported: 1, dropped: 1, failedPosts: 0 });
  });

  for (const protocol of ["http/protobuf", "http/json"] as const) {
    it(`${protocol}: a deferred span is counted when recorded and written at the post, in the order recorded`, async () => {
      const { recorder, bodies } = recorderKeepingBodies(protocol);
      const writes: string[] = [];
      recorder.recordLater({
        write(spans) {
          writes.push("chat");
          spans.recordChat(CHAT);
        },
      });
      recorder.recordAttempt(ATTEMPT);
      recorder.recordLater({
        write(spans) {
          writes.push("tool");
          spans.record(SPAN);
        },
      });
      // Nothing is built until the recorder posts.
      expect(writes).toEqual([]);
      expect(recorder.tally).toEqual({ recorded: 3, exported: 0, dropped: 0, failedPosts: 0 });
      await recorder.flush();
      expect(writes).toEqual(["chat", "tool"]);
      const [body] = bodies;
      const read = readBody(body);
      expect(bodies).toHaveLength(1);
      // Spans written at once come first, then the deferred ones as they were recorded.
      expect(read.ok && read.value[0]?.spans).toEqual([toAttemptSpan(toHexAttemptInput(ATTEMPT)), toChatSpan(toHexChatInput(CHAT)), SPAN]);
      expect(recorder.tally).toEqual({ recorded: 3, exported: 3, dropped: 0, failedPosts: 0 });
    });
  }

  it("protobuf: a deferred span that throws, or cannot be written, is dropped and counted; one body of nothing but those is not posted", async () => {
    const { recorder, bodies } = recorderKeepingBodies("http/protobuf");
    recorder.recordLater({
      write() {
        throw new Error("no input");
      },
    });
    recorder.recordLater({
      write: (spans) => spans.recordAttempt({ ...ATTEMPT, previous: { traceId: PLACE.traceId, spanId: null as unknown as Uint8Array } }),
    });
    await recorder.flush();
    expect(bodies).toEqual([]);
    expect(recorder.tally).toEqual({ recorded: 2, exported: 0, dropped: 2, failedPosts: 0 });
    recorder.recordLater({ write: (spans) => spans.recordChat(CHAT) });
    await recorder.flush();
    const read = readBody(bodies[0]);
    expect(read.ok && read.value[0]?.spans).toEqual([toChatSpan(toHexChatInput(CHAT))]);
    expect(recorder.tally).toEqual({ recorded: 3, exported: 1, dropped: 2, failedPosts: 0 });
  });

  it("protobuf: deferred spans count toward the bound on a body (SPANS_PER_POST), and are written when it is reached", async () => {
    const { recorder, bodies } = recorderKeepingBodies("http/protobuf");
    for (let i = 0; i < SPANS_PER_POST; i += 1) recorder.recordLater({ write: (spans) => spans.recordChat(CHAT) });
    // The bound was reached by the last one: its post is on its way before any flush.
    expect(bodies).toHaveLength(1);
    recorder.recordLater({ write: (spans) => spans.recordChat(CHAT) });
    await recorder.flush();
    const counts = bodies.map((body) => {
      const read = readBody(body);
      return read.ok ? read.value[0]?.spans.length : -1;
    });
    expect(counts).toEqual([SPANS_PER_POST, 1]);
    expect(recorder.tally).toEqual({ recorded: SPANS_PER_POST + 1, exported: SPANS_PER_POST + 1, dropped: 0, failedPosts: 0 });
  });

  it("protobuf: an unsampled invocation that records nothing posts nothing", async () => {
    const posts: unknown[] = [];
    const recorder = createSpanRecorder({
      settings: settings("http/protobuf"),
      fetch: async (input) => {
        posts.push(input);
        return new Response(null, { status: 200 });
      },
    });
    await recorder.flush();
    expect(posts).toEqual([]);
    expect(recorder.tally).toEqual({ recorded: 0, exported: 0, dropped: 0, failedPosts: 0 });
  });
});
