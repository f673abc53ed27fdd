import { describe, expect, it } from "vitest";
import { fromOtlpJson, fromOtlpProtobuf } from "./otlp-decoding.ts";
import { ProtobufSpanBuffer, toOtlpJson, toOtlpProtobuf, type SpanBatch } from "./otlp-encoding.ts";
import { SPAN_KIND, type TraceSpan } from "./trace-span.ts";

const SPAN: TraceSpan = {
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  spanId: "00f067aa0ba902b7",
  parentSpanId: "1111111111111111",
  name: "chat mock-1 ✓",
  kind: SPAN_KIND.client,
  startMs: 1_764_000_000_123.456,
  endMs: 1_764_000_000_373.5,
  attributes: {
    "gen_ai.operation.name": "chat",
    "gen_ai.usage.input_tokens": 120,
    "gen_ai.usage.cost": 0.000_024,
    "edgeswarm.big": 2 ** 40,
    "edgeswarm.negative": -3,
    "edgeswarm.flag": true,
    "gen_ai.response.finish_reasons": ["stop", "length"],
  },
  status: { code: 2, message: "rate_limited" },
  links: [{ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "2222222222222222", attributes: { "edgeswarm.link": "previous_attempt" } }],
};
const ROOT: TraceSpan = {
  ...SPAN,
  spanId: "3333333333333333",
  parentSpanId: null,
  name: "swarm",
  kind: SPAN_KIND.internal,
  attributes: {},
  status: { code: 0 },
};
delete (ROOT as { links?: unknown }).links;
const BATCH: SpanBatch = { resource: { "service.name": "edgeswarm-agent" }, scope: { name: "edgeswarm", version: "0.1.0" }, spans: [SPAN, ROOT] };

describe("OTLP protobuf", () => {
  it("writes the fields' bytes as trace.proto numbers them", () => {
    // resource_spans { resource { attributes { key "a" value { int_value 1 } } } scope_spans { scope { name "s" version "" } } }
    const bytes = toOtlpProtobuf([{ resource: { a: 1 }, scope: { name: "s", version: "" }, spans: [] }]);
    expect(Array.from(bytes)).toEqual([
      0x0a, 0x14, 0x0a, 0x09, 0x0a, 0x07, 0x0a, 0x01, 0x61, 0x12, 0x02, 0x18, 0x01, 0x12, 0x07, 0x0a, 0x05, 0x0a, 0x01, 0x73, 0x12, 0x00,
    ]);
  });

  it("round-trips spans: ids, names, kinds, times to the microsecond, every attribute type, links, status", () => {
    const read = fromOtlpProtobuf(toOtlpProtobuf([BATCH]));
    expect(read).toEqual({ ok: true, value: [BATCH] });
  });

  it("refuses a truncated body", () => {
    const bytes = toOtlpProtobuf([BATCH]);
    expect(fromOtlpProtobuf(bytes.subarray(0, bytes.length - 3)).ok).toBe(false);
  });
});

describe("OTLP JSON", () => {
  it("uses hex ids, decimal-string nanoseconds and numeric enums", () => {
    const body = JSON.parse(toOtlpJson([BATCH])) as { resourceSpans: [{ scopeSpans: [{ spans: Array<Record<string, unknown>> }] }] };
    const span = body.resourceSpans[0].scopeSpans[0].spans[0];
    expect(span).toMatchObject({
      traceId: SPAN.traceId,
      spanId: SPAN.spanId,
      parentSpanId: SPAN.parentSpanId,
      kind: 3,
      startTimeUnixNano: "1764000000123456000",
      endTimeUnixNano: "1764000000373500000",
      status: { code: 2, message: "rate_limited" },
    });
    expect(span?.attributes).toContainEqual({ key: "gen_ai.usage.input_tokens", value: { intValue: "120" } });
    expect(span?.attributes).toContainEqual({ key: "gen_ai.usage.cost", value: { doubleValue: 0.000_024 } });
  });

  it("round-trips spans", () => {
    expect(fromOtlpJson(toOtlpJson([BATCH]))).toEqual({ ok: true, value: [BATCH] });
  });

  it("refuses text that is not JSON", () => {
    expect(fromOtlpJson("{").ok).toBe(false);
  });
});

describe("OTLP protobuf, large nested messages", () => {
  it.each([127, 128, 300, 20_000])("an attribute value of %i bytes round-trips (its length's varint grows in place)", (size) => {
    const batch: SpanBatch = { ...BATCH, spans: [{ ...SPAN, attributes: { "gen_ai.input.messages": "x".repeat(size) } }] };
    expect(fromOtlpProtobuf(toOtlpProtobuf([batch]))).toEqual({ ok: true, value: [batch] });
  });
});

describe("OTLP protobuf, strings and times written by hand", () => {
  it.each([
    ["ASCII", "chat mock-1", "chat mock-1"],
    ["two-byte UTF-8", "résumé", "résumé"],
    ["three-byte UTF-8", "✓ 完了", "✓ 完了"],
    ["a surrogate pair (four bytes)", "tool 🧪 done", "tool 🧪 done"],
    ["a lone high surrogate becomes U+FFFD, as TextEncoder writes it", "a\ud800b", "a\ufffdb"],
    ["a lone low surrogate", "a\udc00b", "a\ufffdb"],
    ["a high surrogate at the end", "end\ud83e", "end\ufffd"],
    ["empty", "", ""],
  ])("%s: a span name round-trips as its UTF-8 bytes", (_, name, read) => {
    const span = { ...ROOT, name, attributes: { "edgeswarm.text": name } };
    const decoded = fromOtlpProtobuf(toOtlpProtobuf([{ ...BATCH, spans: [span] }]));
    expect(decoded).toEqual({ ok: true, value: [{ ...BATCH, spans: [{ ...span, name: read, attributes: { "edgeswarm.text": read } }] }] });
  });

  it.each([0, 0.001, 4_294_967.295, 4_294_967.296, 4_294_967.297, 1_764_000_000_123.456, 4_102_444_800_000.999])(
    "epoch %d ms is written as its nanoseconds (fixed64, little-endian)",
    (epochMs) => {
      const bytes = toOtlpProtobuf([{ ...BATCH, spans: [{ ...ROOT, startMs: epochMs }] }]);
      const nanos = BigInt(Math.round(epochMs * 1_000)) * 1_000n;
      // Span.start_time_unix_nano = 7, wire type 1 (fixed64): tag 0x39, then the 8 bytes.
      const expected = [0x39, ...Array.from({ length: 8 }, (_, i) => Number((nanos >> BigInt(8 * i)) & 0xffn))];
      const found = Array.from(bytes).some((_, at) => expected.every((byte, i) => bytes[at + i] === byte));
      expect(found).toBe(true);
    },
  );
});

describe("OTLP protobuf, spans encoded as they are added", () => {
  it("writes the same bytes as the whole batch at once, and starts empty again after each body", () => {
    const buffer = new ProtobufSpanBuffer(BATCH.resource, BATCH.scope);
    buffer.add(SPAN);
    buffer.add(ROOT);
    expect(buffer.count).toBe(2);
    expect(Array.from(buffer.take())).toEqual(Array.from(toOtlpProtobuf([BATCH])));
    expect(buffer.count).toBe(0);
    buffer.add(ROOT);
    expect(fromOtlpProtobuf(buffer.take())).toEqual({ ok: true, value: [{ ...BATCH, spans: [ROOT] }] });
    expect(Array.from(buffer.take())).toEqual(Array.from(toOtlpProtobuf([{ ...BATCH, spans: [] }])));
  });

  it("a buffer that never had a span writes an empty batch", () => {
    expect(Array.from(new ProtobufSpanBuffer(BATCH.resource, BATCH.scope).take())).toEqual(Array.from(toOtlpProtobuf([{ ...BATCH, spans: [] }])));
  });

  it("a body past the buffer's first size (and a length past one varint byte) round-trips", () => {
    const buffer = new ProtobufSpanBuffer(BATCH.resource, BATCH.scope);
    const spans = Array.from({ length: 300 }, (_, i) => ({
      ...SPAN,
      name: `chat ${i}`,
      attributes: { "edgeswarm.i": i, "gen_ai.input.messages": "x".repeat(i) },
    }));
    for (const span of spans) buffer.add(span);
    const body = buffer.take();
    expect(body.length).toBeGreaterThan(16_384);
    expect(fromOtlpProtobuf(body)).toEqual({ ok: true, value: [{ ...BATCH, spans }] });
  });
});
