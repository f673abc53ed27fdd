// A finished span as the engine records it, before any wire encoding (otlp-encoding.ts). No I/O.

/** OTLP's SpanKind numbers (opentelemetry-proto trace.proto). */
export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;
export type SpanKind = (typeof SPAN_KIND)[keyof typeof SPAN_KIND];

/** Integers are encoded as OTLP int values, other numbers as doubles. */
export type AttributeValue = string | number | boolean | readonly string[];
export type SpanAttributes = Record<string, AttributeValue>;

export interface SpanLink {
  traceId: string;
  spanId: string;
  attributes?: SpanAttributes;
}

export interface TraceSpan {
  traceId: string;
  spanId: string;
  /** null: the trace's root. */
  parentSpanId: string | null;
  name: string;
  kind: SpanKind;
  /** Epoch ms (fractions kept: OTLP carries nanoseconds). */
  startMs: number;
  endMs: number;
  attributes: SpanAttributes;
  /** OTLP StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: 0 | 1 | 2; message?: string };
  links?: SpanLink[];
}
