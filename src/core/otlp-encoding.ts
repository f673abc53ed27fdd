// OTLP/HTTP bodies of an ExportTraceServiceRequest (opentelemetry-proto, collector/trace/v1 and
// trace/v1): protobuf, written by hand for the few messages a trace export needs, and the JSON
// mapping (ids as hex, 64-bit integers as decimal strings, enums as numbers:
// opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding). No I/O.
import type { AttributeValue, SpanAttributes, TraceSpan } from "./trace-span.ts";

/** The process that made the spans (resource) and the library that recorded them (scope). */
export interface SpanBatch {
  resource: SpanAttributes;
  scope: { name: string; version: string };
  spans: readonly TraceSpan[];
}

// The core's tsconfig has no DOM or Workers types (STYLE.md); both runtimes it runs in (workerd and
// Node) have the WHATWG Encoding API, so its encoder is declared here for this module only.
declare class TextEncoder {
  encode(input: string): Uint8Array;
}
const utf8 = new TextEncoder();

/** Attribute keys are a few dozen constants, repeated in every span: each is encoded once. */
const keyBytes = new Map<string, Uint8Array>();
export function toKeyBytes(key: string): Uint8Array {
  let bytes = keyBytes.get(key);
  if (bytes === undefined) {
    bytes = utf8.encode(key);
    if (keyBytes.size < 1_024) keyBytes.set(key, bytes);
  }
  return bytes;
}

/** Span.flags: W3C trace flags in the low byte; only sampled spans are ever recorded. */
export const SAMPLED_FLAGS = 0x01;

// ── protobuf ──────────────────────────────────────────────────────────────────────────────────

const VARINT = 0;
const FIXED64 = 1;
const LENGTH = 2;
const FIXED32 = 5;

/**
 * A growable buffer of protobuf fields. Strings and hex ids are written into it directly, not
 * through TextEncoder or a Uint8Array per value: at a few dozen values a span, each a call into the
 * runtime and an allocation, they were most of a flush's time in a profile of the traced bench.
 */
export class ProtoWriter {
  private buffer: Uint8Array;
  private view: DataView;
  private length = 0;

  constructor(capacity = 16_384) {
    this.buffer = new Uint8Array(capacity);
    this.view = new DataView(this.buffer.buffer);
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.length + bytes) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buffer.subarray(0, this.length));
    this.buffer = next;
    this.view = new DataView(next.buffer);
  }

  private byte(value: number): void {
    this.reserve(1);
    this.buffer[this.length] = value;
    this.length += 1;
  }

  /** A non-negative integer up to 2^53 (JavaScript numbers), or a negative one as 64-bit two's complement. */
  varint(value: number): void {
    if (value < 0) {
      let n = BigInt.asUintN(64, BigInt(Math.trunc(value)));
      while (n >= 0x80n) {
        this.byte(Number(n & 0x7fn) | 0x80);
        n >>= 7n;
      }
      this.byte(Number(n));
      return;
    }
    if (value < 0x80) {
      this.byte(value);
      return;
    }
    let n = Math.trunc(value);
    while (n >= 0x80) {
      this.byte((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    this.byte(n);
  }

  private tag(field: number, wireType: number): void {
    const tag = field * 8 + wireType;
    if (tag < 0x80) this.byte(tag);
    else this.varint(tag);
  }

  uint(field: number, value: number): void {
    this.tag(field, VARINT);
    this.varint(value);
  }

  bool(field: number, value: boolean): void {
    this.uint(field, value ? 1 : 0);
  }

  bytes(field: number, value: Uint8Array): void {
    this.tag(field, LENGTH);
    this.varint(value.length);
    this.raw(value);
  }

  /**
   * UTF-8, as TextEncoder writes it (a lone surrogate becomes U+FFFD), in one pass: a byte is kept
   * for the length, as a nested message's (endMessage).
   */
  string(field: number, value: string): void {
    const lengthAt = this.beginMessage(field);
    // At most 3 bytes a UTF-16 unit (a surrogate pair's 4 bytes are 2 units).
    this.reserve(3 * value.length);
    const buffer = this.buffer;
    let at = this.length;
    for (let i = 0; i < value.length; i += 1) {
      let code = value.charCodeAt(i);
      if (code < 0x80) {
        buffer[at++] = code;
        continue;
      }
      if (code < 0x800) {
        buffer[at++] = 0xc0 | (code >> 6);
        buffer[at++] = 0x80 | (code & 0x3f);
        continue;
      }
      if (code >= 0xd800 && code <= 0xdfff) {
        const next = value.charCodeAt(i + 1);
        if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
          i += 1;
          buffer[at++] = 0xf0 | (code >> 18);
          buffer[at++] = 0x80 | ((code >> 12) & 0x3f);
          buffer[at++] = 0x80 | ((code >> 6) & 0x3f);
          buffer[at++] = 0x80 | (code & 0x3f);
          continue;
        }
        code = 0xfffd;
      }
      buffer[at++] = 0xe0 | (code >> 12);
      buffer[at++] = 0x80 | ((code >> 6) & 0x3f);
      buffer[at++] = 0x80 | (code & 0x3f);
    }
    this.length = at;
    this.endMessage(lengthAt);
  }

  /**
   * A KeyValue whose value is a string or a non-negative integer, at `field`, without a closure per
   * nested message: most of a span's fields are these, and in a profile of a traced swarm in workerd
   * the nested messages' closures led the encoding.
   */
  plainAttribute(field: number, key: Uint8Array, value: string | number): void {
    // KeyValue { key = 1, value = 2 }, AnyValue { string_value = 1 } or { int_value = 3 }
    const keyValue = this.beginMessage(field);
    this.bytes(1, key);
    const anyValue = this.beginMessage(2);
    if (typeof value === "string") this.string(1, value);
    else this.uint(3, value);
    this.endMessage(anyValue);
    this.endMessage(keyValue);
  }

  /** An id given as lower- or upper-case hex digits, as its bytes. */
  hexBytes(field: number, hex: string): void {
    const size = hex.length >> 1;
    this.tag(field, LENGTH);
    this.varint(size);
    this.reserve(size);
    for (let i = 0; i < size; i += 1) this.buffer[this.length + i] = (hexDigit(hex.charCodeAt(2 * i)) << 4) | hexDigit(hex.charCodeAt(2 * i + 1));
    this.length += size;
  }

  double(field: number, value: number): void {
    this.tag(field, FIXED64);
    this.reserve(8);
    this.view.setFloat64(this.length, value, true);
    this.length += 8;
  }

  fixed32(field: number, value: number): void {
    this.tag(field, FIXED32);
    this.reserve(4);
    this.view.setUint32(this.length, value >>> 0, true);
    this.length += 4;
  }

  /**
   * Epoch ms as fixed64 nanoseconds, to the microsecond: µs = round(ms × 1000) is exact in a double
   * (< 2^53), and ns = µs × 1000 is written as two 32-bit halves, each product exact too.
   */
  nanos(field: number, epochMs: number): void {
    this.tag(field, FIXED64);
    this.reserve(8);
    const micros = Math.round(epochMs * 1_000);
    const lowProduct = (micros % 0x1_0000_0000) * 1_000;
    const low = lowProduct % 0x1_0000_0000;
    const high = Math.floor(micros / 0x1_0000_0000) * 1_000 + Math.floor(lowProduct / 0x1_0000_0000);
    this.view.setUint32(this.length, low, true);
    this.view.setUint32(this.length + 4, high, true);
    this.length += 8;
  }

  /**
   * A nested message, written in place: one byte is kept for its length, and the body is moved
   * right in the rare case its length needs more (no buffer per nested message: a span has dozens).
   */
  message(field: number, write: (writer: ProtoWriter) => void): void {
    const lengthAt = this.beginMessage(field);
    write(this);
    this.endMessage(lengthAt);
  }

  /** Starts a nested message at `field` (as message() does, without a closure); endMessage with what it returns. */
  beginMessage(field: number): number {
    this.tag(field, LENGTH);
    this.reserve(1);
    const lengthAt = this.length;
    this.length += 1;
    return lengthAt;
  }

  /** Ends the nested message beginMessage started at `lengthAt`: writes its length. */
  endMessage(lengthAt: number): void {
    const size = this.length - lengthAt - 1;
    if (size < 0x80) {
      this.buffer[lengthAt] = size;
      return;
    }
    let extra = 0;
    for (let n = size; n >= 0x80; n = Math.floor(n / 0x80)) extra += 1;
    this.reserve(extra);
    this.buffer.copyWithin(lengthAt + 1 + extra, lengthAt + 1, this.length);
    const end = this.length + extra;
    this.length = lengthAt;
    this.varint(size);
    this.length = end;
  }

  /** Bytes already encoded (a run of fields), as they are. */
  raw(bytes: Uint8Array): void {
    const size = bytes.length;
    this.reserve(size);
    // A loop for the few bytes of a key or an id: set() is a call into the runtime.
    if (size > 64) this.buffer.set(bytes, this.length);
    else for (let i = 0; i < size; i += 1) this.buffer[this.length + i] = bytes[i] ?? 0;
    this.length += size;
  }

  /** What is written so far, without a copy: valid until the next write or truncate. */
  written(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }

  /** Back to its first `length` bytes (0: empty), its memory kept for the next body. */
  truncate(length: number): void {
    this.length = Math.min(this.length, length);
  }

  finish(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }
}

/** 0–15 for a hex digit's char code (ids are checked as hex before they become spans). */
function hexDigit(code: number): number {
  return code <= 0x39 ? code - 0x30 : (code | 0x20) - 0x57;
}

/** The protobuf body of POST /v1/traces (Content-Type: application/x-protobuf). */
export function toOtlpProtobuf(batches: readonly SpanBatch[]): Uint8Array {
  const request = new ProtoWriter();
  for (const batch of batches) {
    writeResourceSpans(request, batch.resource, batch.scope, (scopeSpans) => {
      for (const span of batch.spans) writeSpanField(scopeSpans, span);
    });
  }
  return request.finish();
}

/**
 * One resource's spans as a protobuf body, encoded as each span is added rather than all at the
 * end: a span is bytes from the moment it is recorded, so no span object, with its attributes and
 * ids, lives on until the invocation's flush (in a lane that is seconds, through many of V8's
 * young-generation collections, each copying what is still alive). The buffer's memory is kept
 * from one body to the next.
 */
export class ProtobufSpanBuffer {
  /** Made by the first span: an invocation of an unsampled swarm records none and allocates nothing. */
  private spans: ProtoWriter | null = null;
  private added = 0;
  private readonly resource: SpanAttributes;
  private readonly scope: { name: string; version: string };

  // No parameter properties: Node runs the scripts' imports of the core by stripping types only.
  constructor(resource: SpanAttributes, scope: { name: string; version: string }) {
    this.resource = resource;
    this.scope = scope;
  }

  /** Spans added since the last `take`. */
  get count(): number {
    return this.added;
  }

  /** Encodes `span`; a span that cannot be (it throws) leaves no byte behind. */
  add(span: TraceSpan): void {
    this.addWritten(writeSpan, span);
  }

  /**
   * Adds a span that `write` writes straight from `input` (Span's fields, without ScopeSpans' tag and
   * length): no TraceSpan object in between. A span that cannot be written leaves no byte behind.
   */
  addWritten<T>(write: (writer: ProtoWriter, input: T) => void, input: T): void {
    this.spans ??= new ProtoWriter();
    const spans = this.spans;
    const before = spans.written().length;
    try {
      // ScopeSpans.spans = 2
      const span = spans.beginMessage(2);
      write(spans, input);
      spans.endMessage(span);
    } catch (error) {
      spans.truncate(before);
      throw error;
    }
    this.added += 1;
  }

  /** The body of the spans added since the last take (as toOtlpProtobuf writes them); the buffer is emptied. */
  take(): Uint8Array {
    const spans = this.spans?.written() ?? new Uint8Array(0);
    const request = new ProtoWriter(spans.length + 512);
    writeResourceSpans(request, this.resource, this.scope, (scopeSpans) => scopeSpans.raw(spans));
    this.spans?.truncate(0);
    this.added = 0;
    // The request's writer is this body's alone: its bytes as they are, not copied once more (about 1 MB a lane).
    return request.written();
  }
}

/** ExportTraceServiceRequest.resource_spans = 1, with one ScopeSpans whose spans `writeSpans` writes. */
function writeResourceSpans(
  request: ProtoWriter,
  resource: SpanAttributes,
  scope: { name: string; version: string },
  writeSpans: (scopeSpans: ProtoWriter) => void,
): void {
  request.message(1, (resourceSpans) => {
    // ResourceSpans.resource = 1 → Resource.attributes = 1
    resourceSpans.message(1, (writer) => writeAttributes(writer, 1, resource));
    // ResourceSpans.scope_spans = 2
    resourceSpans.message(2, (scopeSpans) => {
      // ScopeSpans.scope = 1 → InstrumentationScope { name = 1, version = 2 }
      scopeSpans.message(1, (writer) => {
        writer.string(1, scope.name);
        writer.string(2, scope.version);
      });
      writeSpans(scopeSpans);
    });
  });
}

/** ScopeSpans.spans = 2. */
function writeSpanField(scopeSpans: ProtoWriter, span: TraceSpan): void {
  scopeSpans.message(2, (writer) => writeSpan(writer, span));
}

/** A span's fields (Span, without ScopeSpans' tag and length). */
export function writeSpan(writer: ProtoWriter, span: TraceSpan): void {
  writer.hexBytes(1, span.traceId);
  writer.hexBytes(2, span.spanId);
  if (span.parentSpanId !== null) writer.hexBytes(4, span.parentSpanId);
  writer.string(5, span.name);
  writer.uint(6, span.kind);
  writer.nanos(7, span.startMs);
  writer.nanos(8, span.endMs);
  writeAttributes(writer, 9, span.attributes);
  for (const link of span.links ?? []) {
    // Span.links = 13: Link { trace_id = 1, span_id = 2, attributes = 4, flags = 6 }
    writer.message(13, (linkWriter) => {
      linkWriter.hexBytes(1, link.traceId);
      linkWriter.hexBytes(2, link.spanId);
      writeAttributes(linkWriter, 4, link.attributes ?? {});
    });
  }
  // Span.status = 15: Status { message = 2, code = 3 }
  if (span.status.code !== 0 || span.status.message !== undefined) {
    writer.message(15, (status) => {
      if (span.status.message !== undefined) status.string(2, span.status.message);
      if (span.status.code !== 0) status.uint(3, span.status.code);
    });
  }
  // Span.flags = 16 (fixed32): the W3C trace flags (only sampled spans are recorded).
  writer.fixed32(16, SAMPLED_FLAGS);
}

/** Repeated KeyValue { key = 1, value = 2 } at `field`. */
function writeAttributes(writer: ProtoWriter, field: number, attributes: SpanAttributes): void {
  for (const key in attributes) {
    const value = attributes[key];
    if (value === undefined) continue;
    writeAttribute(writer, field, toKeyBytes(key), value);
  }
}

/** One KeyValue { key = 1, value = 2 } at `field`, its key already UTF-8 (toKeyBytes). */
export function writeAttribute(writer: ProtoWriter, field: number, key: Uint8Array, value: AttributeValue): void {
  if (typeof value === "string" || (typeof value === "number" && Number.isSafeInteger(value) && value >= 0)) {
    writer.plainAttribute(field, key, value);
    return;
  }
  const keyValue = writer.beginMessage(field);
  writer.bytes(1, key);
  const anyValue = writer.beginMessage(2);
  writeAnyValue(writer, value);
  writer.endMessage(anyValue);
  writer.endMessage(keyValue);
}

/** AnyValue { string_value = 1, bool_value = 2, int_value = 3, double_value = 4, array_value = 5 }. */
function writeAnyValue(writer: ProtoWriter, value: AttributeValue): void {
  if (typeof value === "string") writer.string(1, value);
  else if (typeof value === "boolean") writer.bool(2, value);
  else if (typeof value === "number") {
    if (Number.isSafeInteger(value)) writer.uint(3, value);
    else writer.double(4, value);
  } else {
    // ArrayValue { values = 1 }
    writer.message(5, (array) => {
      for (const item of value) array.message(1, (anyValue) => anyValue.string(1, item));
    });
  }
}

// ── JSON ──────────────────────────────────────────────────────────────────────────────────────

function toNanos(epochMs: number): bigint {
  return BigInt(Math.round(epochMs * 1_000)) * 1_000n;
}

/** The JSON body of POST /v1/traces (Content-Type: application/json). */
export function toOtlpJson(batches: readonly SpanBatch[]): string {
  return JSON.stringify({
    resourceSpans: batches.map((batch) => ({
      resource: { attributes: toJsonAttributes(batch.resource) },
      scopeSpans: [{ scope: { name: batch.scope.name, version: batch.scope.version }, spans: batch.spans.map(toJsonSpan) }],
    })),
  });
}

function toJsonSpan(span: TraceSpan): Record<string, unknown> {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.parentSpanId === null ? {} : { parentSpanId: span.parentSpanId }),
    flags: SAMPLED_FLAGS,
    name: span.name,
    kind: span.kind,
    startTimeUnixNano: toNanos(span.startMs).toString(),
    endTimeUnixNano: toNanos(span.endMs).toString(),
    attributes: toJsonAttributes(span.attributes),
    ...(span.links === undefined || span.links.length === 0
      ? {}
      : { links: span.links.map((link) => ({ traceId: link.traceId, spanId: link.spanId, attributes: toJsonAttributes(link.attributes ?? {}) })) }),
    status: { code: span.status.code, ...(span.status.message === undefined ? {} : { message: span.status.message }) },
  };
}

function toJsonAttributes(attributes: SpanAttributes): Array<{ key: string; value: Record<string, unknown> }> {
  const out: Array<{ key: string; value: Record<string, unknown> }> = [];
  for (const key in attributes) {
    const value = attributes[key];
    if (value !== undefined) out.push({ key, value: toJsonValue(value) });
  }
  return out;
}

function toJsonValue(value: AttributeValue): Record<string, unknown> {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isSafeInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { arrayValue: { values: value.map((item) => ({ stringValue: item })) } };
}
