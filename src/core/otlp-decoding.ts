// Reads OTLP/HTTP trace bodies (protobuf or JSON ExportTraceServiceRequest) back into spans: what
// `npm run otel-dev` and the tests' receiver print and check. Unknown fields are skipped, as
// protobuf readers must. No I/O.
import type { SpanBatch } from "./otlp-encoding.ts";
import { err, ok, type Result } from "./result.ts";
import type { AttributeValue, SpanAttributes, SpanKind, SpanLink, TraceSpan } from "./trace-span.ts";

declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean });
  decode(input: Uint8Array): string;
}
const utf8 = new TextDecoder("utf-8", { fatal: true });

// ── protobuf ──────────────────────────────────────────────────────────────────────────────────

type Field =
  | { field: number; wireType: 0; value: bigint }
  | { field: number; wireType: 1 | 5; value: Uint8Array }
  | { field: number; wireType: 2; value: Uint8Array };

function readVarint(bytes: Uint8Array, at: { pos: number }): bigint {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (at.pos >= bytes.length) throw new RangeError("truncated varint");
    const byte = bytes[at.pos] ?? 0;
    at.pos += 1;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return result;
    shift += 7n;
    if (shift > 63n) throw new RangeError("varint longer than 10 bytes");
  }
}

function* readFields(bytes: Uint8Array): Generator<Field> {
  const at = { pos: 0 };
  while (at.pos < bytes.length) {
    const key = Number(readVarint(bytes, at));
    const field = key >>> 3;
    const wireType = key & 7;
    if (wireType === 0) yield { field, wireType, value: readVarint(bytes, at) };
    else if (wireType === 1 || wireType === 5) {
      const size = wireType === 1 ? 8 : 4;
      if (at.pos + size > bytes.length) throw new RangeError("truncated fixed field");
      yield { field, wireType, value: bytes.subarray(at.pos, at.pos + size) };
      at.pos += size;
    } else if (wireType === 2) {
      const size = Number(readVarint(bytes, at));
      if (at.pos + size > bytes.length) throw new RangeError("truncated length-delimited field");
      yield { field, wireType, value: bytes.subarray(at.pos, at.pos + size) };
      at.pos += size;
    } else throw new RangeError(`unsupported wire type ${wireType}`);
  }
}

const toHex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const view = (bytes: Uint8Array): DataView => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
const nanosToMs = (nanos: bigint): number => Number(nanos / 1_000n) / 1_000;

/** Reads a protobuf ExportTraceServiceRequest. */
export function fromOtlpProtobuf(body: Uint8Array): Result<SpanBatch[], string> {
  try {
    const batches: SpanBatch[] = [];
    for (const resourceSpans of readFields(body)) {
      if (resourceSpans.field !== 1 || resourceSpans.wireType !== 2) continue;
      let resource: SpanAttributes = {};
      for (const part of readFields(resourceSpans.value)) {
        if (part.wireType !== 2) continue;
        if (part.field === 1) resource = readAttributeList(part.value, 1);
        else if (part.field === 2) batches.push(readScopeSpans(part.value, resource));
      }
      // The resource may come after its scope spans on the wire.
      for (const batch of batches) if (Object.keys(batch.resource).length === 0) batch.resource = resource;
    }
    return ok(batches);
  } catch (error) {
    return err(error instanceof Error ? error.message : String(error));
  }
}

function readScopeSpans(bytes: Uint8Array, resource: SpanAttributes): SpanBatch & { resource: SpanAttributes } {
  const scope = { name: "", version: "" };
  const spans: TraceSpan[] = [];
  for (const part of readFields(bytes)) {
    if (part.wireType !== 2) continue;
    if (part.field === 1) {
      for (const f of readFields(part.value)) {
        if (f.wireType !== 2) continue;
        if (f.field === 1) scope.name = utf8.decode(f.value);
        else if (f.field === 2) scope.version = utf8.decode(f.value);
      }
    } else if (part.field === 2) spans.push(readSpan(part.value));
  }
  return { resource, scope, spans };
}

function readSpan(bytes: Uint8Array): TraceSpan {
  const span: TraceSpan = { traceId: "", spanId: "", parentSpanId: null, name: "", kind: 1, startMs: 0, endMs: 0, attributes: {}, status: { code: 0 } };
  const links: SpanLink[] = [];
  for (const f of readFields(bytes)) {
    if (f.wireType === 2) {
      if (f.field === 1) span.traceId = toHex(f.value);
      else if (f.field === 2) span.spanId = toHex(f.value);
      else if (f.field === 4 && f.value.length > 0) span.parentSpanId = toHex(f.value);
      else if (f.field === 5) span.name = utf8.decode(f.value);
      else if (f.field === 9) Object.assign(span.attributes, readAttributeList(f.value, -1, true));
      else if (f.field === 13) links.push(readLink(f.value));
      else if (f.field === 15) span.status = readStatus(f.value);
    } else if (f.wireType === 0 && f.field === 6) span.kind = Number(f.value) as SpanKind;
    else if (f.wireType === 1 && f.field === 7) span.startMs = nanosToMs(view(f.value).getBigUint64(0, true));
    else if (f.wireType === 1 && f.field === 8) span.endMs = nanosToMs(view(f.value).getBigUint64(0, true));
  }
  if (links.length > 0) span.links = links;
  return span;
}

function readLink(bytes: Uint8Array): SpanLink {
  const link: SpanLink = { traceId: "", spanId: "" };
  const attributes: SpanAttributes = {};
  for (const f of readFields(bytes)) {
    if (f.wireType !== 2) continue;
    if (f.field === 1) link.traceId = toHex(f.value);
    else if (f.field === 2) link.spanId = toHex(f.value);
    else if (f.field === 4) Object.assign(attributes, readAttributeList(f.value, -1, true));
  }
  if (Object.keys(attributes).length > 0) link.attributes = attributes;
  return link;
}

function readStatus(bytes: Uint8Array): TraceSpan["status"] {
  const status: TraceSpan["status"] = { code: 0 };
  for (const f of readFields(bytes)) {
    if (f.field === 2 && f.wireType === 2) status.message = utf8.decode(f.value);
    else if (f.field === 3 && f.wireType === 0) status.code = Number(f.value) as 0 | 1 | 2;
  }
  return status;
}

/**
 * The KeyValues at `field` of a message (`single`: the bytes are one KeyValue, as a repeated
 * field's element is handed over one at a time).
 */
function readAttributeList(bytes: Uint8Array, field: number, single = false): SpanAttributes {
  const attributes: SpanAttributes = {};
  const add = (keyValue: Uint8Array): void => {
    let key = "";
    let value: AttributeValue | undefined;
    for (const f of readFields(keyValue)) {
      if (f.wireType !== 2) continue;
      if (f.field === 1) key = utf8.decode(f.value);
      else if (f.field === 2) value = readAnyValue(f.value);
    }
    if (value !== undefined) attributes[key] = value;
  };
  if (single) add(bytes);
  else for (const f of readFields(bytes)) if (f.field === field && f.wireType === 2) add(f.value);
  return attributes;
}

function readAnyValue(bytes: Uint8Array): AttributeValue | undefined {
  let value: AttributeValue | undefined;
  for (const f of readFields(bytes)) {
    if (f.field === 1 && f.wireType === 2) value = utf8.decode(f.value);
    else if (f.field === 2 && f.wireType === 0) value = f.value !== 0n;
    else if (f.field === 3 && f.wireType === 0) value = Number(BigInt.asIntN(64, f.value));
    else if (f.field === 4 && f.wireType === 1) value = view(f.value).getFloat64(0, true);
    else if (f.field === 5 && f.wireType === 2) {
      const items: string[] = [];
      for (const item of readFields(f.value)) {
        if (item.field !== 1 || item.wireType !== 2) continue;
        const v = readAnyValue(item.value);
        if (v !== undefined) items.push(String(v));
      }
      value = items;
    }
  }
  return value;
}

// ── JSON ──────────────────────────────────────────────────────────────────────────────────────

interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: JsonAnyValue[] };
}
type JsonAttributes = Array<{ key: string; value?: JsonAnyValue }> | undefined;

/** Reads a JSON ExportTraceServiceRequest (ids in hex, as the OTLP JSON mapping writes them). */
export function fromOtlpJson(text: string): Result<SpanBatch[], string> {
  try {
    const body = JSON.parse(text) as {
      resourceSpans?: Array<{
        resource?: { attributes?: JsonAttributes };
        scopeSpans?: Array<{
          scope?: { name?: string; version?: string };
          spans?: Array<{
            traceId?: string;
            spanId?: string;
            parentSpanId?: string;
            name?: string;
            kind?: number;
            startTimeUnixNano?: string | number;
            endTimeUnixNano?: string | number;
            attributes?: JsonAttributes;
            links?: Array<{ traceId?: string; spanId?: string; attributes?: JsonAttributes }>;
            status?: { code?: number; message?: string };
          }>;
        }>;
      }>;
    };
    const batches: SpanBatch[] = [];
    for (const resourceSpans of body.resourceSpans ?? []) {
      const resource = fromJsonAttributes(resourceSpans.resource?.attributes);
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        batches.push({
          resource,
          scope: { name: scopeSpans.scope?.name ?? "", version: scopeSpans.scope?.version ?? "" },
          spans: (scopeSpans.spans ?? []).map((span) => {
            const links = (span.links ?? []).map((link) => ({
              traceId: link.traceId ?? "",
              spanId: link.spanId ?? "",
              attributes: fromJsonAttributes(link.attributes),
            }));
            return {
              traceId: span.traceId ?? "",
              spanId: span.spanId ?? "",
              parentSpanId: span.parentSpanId === undefined || span.parentSpanId === "" ? null : span.parentSpanId,
              name: span.name ?? "",
              kind: (span.kind ?? 1) as SpanKind,
              startMs: nanosToMs(BigInt(span.startTimeUnixNano ?? 0)),
              endMs: nanosToMs(BigInt(span.endTimeUnixNano ?? 0)),
              attributes: fromJsonAttributes(span.attributes),
              status: { code: (span.status?.code ?? 0) as 0 | 1 | 2, ...(span.status?.message === undefined ? {} : { message: span.status.message }) },
              ...(links.length === 0 ? {} : { links }),
            };
          }),
        });
      }
    }
    return ok(batches);
  } catch (error) {
    return err(error instanceof Error ? error.message : String(error));
  }
}

function fromJsonAttributes(attributes: JsonAttributes): SpanAttributes {
  const out: SpanAttributes = {};
  for (const { key, value } of attributes ?? []) {
    const v = value === undefined ? undefined : fromJsonValue(value);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function fromJsonValue(value: JsonAnyValue): AttributeValue | undefined {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map((item) => String(fromJsonValue(item) ?? ""));
  return undefined;
}
