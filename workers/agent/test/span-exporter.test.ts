// The span recorder's failure paths that no collector can cause: a span or a body that cannot be
// written is dropped and counted, and nothing is posted or thrown (tracing never stops a swarm).
import { describe, expect, it } from "vitest";
import { createSpanRecorder } from "../../../src/telemetry/span-exporter.ts";
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
