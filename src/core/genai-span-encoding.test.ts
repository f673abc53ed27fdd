// The agent's direct path (writeChatSpan, writeAttemptSpan) writes the same bytes as toOtlpProtobuf
// of toChatSpan's and toAttemptSpan's spans, for every optional attribute, and decodes back to them.
import { describe, expect, it } from "vitest";
import { toHexAttemptInput, toHexChatInput, writeAttemptSpan, writeChatSpan } from "./genai-span-encoding.ts";
import { toAttemptSpan, toChatSpan, type AttemptSpanInput, type ChatSpanInput, type SpanPlace } from "./genai-spans.ts";
import { fromOtlpProtobuf } from "./otlp-decoding.ts";
import { ProtobufSpanBuffer, toOtlpProtobuf, type ProtoWriter } from "./otlp-encoding.ts";
import type { CallRecord } from "./swarm-contract.ts";
import { newSpanId, newSpanIdBytes, toAttemptSpanId, toAttemptSpanIdBytes, toHexId, toIdBytes } from "./trace-context.ts";
import type { TraceSpan } from "./trace-span.ts";

const RESOURCE = { "service.name": "edgeswarm-agent", "telemetry.sdk.name": "edgeswarm", "telemetry.sdk.language": "webjs" };
const SCOPE = { name: "edgeswarm", version: "0.1.0" };
const PLACE: SpanPlace<Uint8Array> = {
  traceId: toIdBytes("4bf92f3577b34da6a3ce929d0e0e4736"),
  spanId: toIdBytes("00f067aa0ba902b7"),
  parentSpanId: toIdBytes("a1b2c3d4e5f60718"),
};
const USAGE = { prompt_tokens: 120, cached_tokens: 20, completion_tokens: 30, reasoning_tokens: 0, total_tokens: 150 };
const OK_CALL: CallRecord = {
  turn: 1,
  model: "mock-1",
  usage: USAGE,
  latencyMs: 250.125,
  ttfbMs: 40.5,
  status: "ok",
  errorClass: null,
  startedAt: 1_764_000_000_123.456,
};

function chat(overrides: Partial<ChatSpanInput<Uint8Array>>): ChatSpanInput<Uint8Array> {
  return {
    place: PLACE,
    swarmId: "sw_vubk2jal4pz2hspfnjxb",
    taskId: "task-0001",
    attempt: 1,
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

function attempt(overrides: Partial<AttemptSpanInput<Uint8Array>>): AttemptSpanInput<Uint8Array> {
  return {
    place: PLACE,
    swarmId: "sw_vubk2jal4pz2hspfnjxb",
    taskId: "task-0001",
    attempt: 1,
    startMs: 1_764_000_000_000.25,
    endMs: 1_764_000_000_203,
    outcome: "succeeded",
    errorType: null,
    previous: null,
    ...overrides,
  };
}

/** The body of `write(input)` through the buffer the recorder uses. */
function written<T>(write: (writer: ProtoWriter, input: T) => void, input: T): Uint8Array {
  const buffer = new ProtobufSpanBuffer(RESOURCE, SCOPE);
  buffer.addWritten(write, input);
  return buffer.take();
}

function expectSameBody(direct: Uint8Array, span: TraceSpan): void {
  expect(Array.from(direct)).toEqual(Array.from(toOtlpProtobuf([{ resource: RESOURCE, scope: SCOPE, spans: [span] }])));
  expect(fromOtlpProtobuf(direct)).toEqual({ ok: true, value: [{ resource: RESOURCE, scope: SCOPE, spans: [span] }] });
}

const LONG_TEXT = "ü✓😀 ".repeat(100);

const CHATS: Array<[string, ChatSpanInput<Uint8Array>]> = [
  ["a call that answered", chat({})],
  [
    "a failed call without usage, class or finish reason",
    chat({ call: { ...OK_CALL, usage: null, status: "error", errorClass: null, ttfbMs: null }, finishReason: null, costUsd: null }),
  ],
  ["a rate-limited call without ttfb", chat({ call: { ...OK_CALL, status: "error", errorClass: "rate_limited", ttfbMs: undefined } })],
  ["a backup call that won, a later turn and attempt", chat({ call: { ...OK_CALL, turn: 3, hedge: "won" }, attempt: 4 })],
  [
    "a backup call that lost, a whole-number cost and large counts",
    chat({ call: { ...OK_CALL, hedge: "lost", usage: { ...USAGE, prompt_tokens: 2 ** 40 } }, costUsd: 3 }),
  ],
  ["a root's child (no parent) with a unicode model", chat({ place: { ...PLACE, parentSpanId: null }, call: { ...OK_CALL, model: "modèle-✓" } })],
  ["content opted in, long enough for two-byte lengths", chat({ content: { input: [{ role: "user", content: LONG_TEXT }], output: LONG_TEXT } })],
  ["content opted in without an answer", chat({ content: { input: [{ role: "user", content: "hi" }], output: null }, finishReason: null })],
];

const ATTEMPTS: Array<[string, AttemptSpanInput<Uint8Array>]> = [
  ["an attempt that succeeded", attempt({})],
  [
    "a failed retry, linked to the attempt before it",
    attempt({ attempt: 2, outcome: "failed", errorType: "upstream_timeout", previous: { traceId: PLACE.traceId, spanId: toIdBytes("2222222222222222") } }),
  ],
  ["a deferred attempt with a unicode task id", attempt({ outcome: "deferred", taskId: "tâche-✓" })],
];

describe("writeChatSpan", () => {
  for (const [name, input] of CHATS) {
    it(`${name}: toChatSpan's bytes, decoded back to its span`, () => {
      expectSameBody(written(writeChatSpan, input), toChatSpan(toHexChatInput(input)));
    });
  }
});

describe("writeAttemptSpan", () => {
  for (const [name, input] of ATTEMPTS) {
    it(`${name}: toAttemptSpan's bytes, decoded back to its span`, () => {
      expectSameBody(written(writeAttemptSpan, input), toAttemptSpan(toHexAttemptInput(input)));
    });
  }

  it("spans written after one another make one body, as toOtlpProtobuf writes them", () => {
    const buffer = new ProtobufSpanBuffer(RESOURCE, SCOPE);
    buffer.addWritten(writeChatSpan, CHATS[0]?.[1] ?? chat({}));
    buffer.addWritten(writeAttemptSpan, ATTEMPTS[1]?.[1] ?? attempt({}));
    const spans = [toChatSpan(toHexChatInput(CHATS[0]?.[1] ?? chat({}))), toAttemptSpan(toHexAttemptInput(ATTEMPTS[1]?.[1] ?? attempt({})))];
    expect(buffer.count).toBe(2);
    expect(Array.from(buffer.take())).toEqual(Array.from(toOtlpProtobuf([{ resource: RESOURCE, scope: SCOPE, spans }])));
  });

  it("a span that throws while written leaves no byte behind", () => {
    const buffer = new ProtobufSpanBuffer(RESOURCE, SCOPE);
    buffer.addWritten(writeAttemptSpan, attempt({}));
    const bad = attempt({ errorType: "x", previous: { traceId: PLACE.traceId, spanId: null as unknown as Uint8Array } });
    expect(() => buffer.addWritten(writeAttemptSpan, bad)).toThrow();
    expect(buffer.count).toBe(1);
    expect(Array.from(buffer.take())).toEqual(
      Array.from(toOtlpProtobuf([{ resource: RESOURCE, scope: SCOPE, spans: [toAttemptSpan(toHexAttemptInput(attempt({})))] }])),
    );
  });
});

describe("ids as bytes", () => {
  it("an attempt's span id as bytes is toAttemptSpanId's", () => {
    for (const [trace, task, n] of [
      ["4bf92f3577b34da6a3ce929d0e0e4736", "task-0001", 1],
      ["4bf92f3577b34da6a3ce929d0e0e4736", "task-0001", 2],
      ["0af7651916cd43dd8448eb211c80319c", "tâche-✓", 7],
    ] as const) {
      expect(toHexId(toAttemptSpanIdBytes(trace, task, n))).toBe(toAttemptSpanId(trace, task, n));
    }
  });

  it("a new span id as bytes is the random bytes, and never all zero (as newSpanId)", () => {
    const bytes = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 0xfe]);
    expect(toHexId(newSpanIdBytes(() => bytes.slice()))).toBe(newSpanId(() => bytes.slice()));
    expect(toHexId(newSpanIdBytes(() => new Uint8Array(8)))).toBe(newSpanId(() => new Uint8Array(8)));
    expect(toHexId(newSpanIdBytes(() => new Uint8Array(8)))).toBe("0000000000000001");
    expect(() => newSpanIdBytes(() => new Uint8Array(4))).toThrow(RangeError);
  });

  it("toIdBytes and toHexId are inverse", () => {
    expect(toHexId(toIdBytes("4bf92f3577b34da6a3ce929d0e0e4736"))).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(Array.from(toIdBytes("00ff10"))).toEqual([0, 255, 16]);
  });
});
