// W3C Trace Context (www.w3.org/TR/trace-context/): the `traceparent` a swarm's trace travels in
// across the queue, pull and executor hops, and the ids its spans carry. No I/O: random bytes
// come from the caller (in a Worker, `(n) => crypto.getRandomValues(new Uint8Array(n))`).
import { hash32 } from "./hash32.ts";

/** A span's place in a trace: 32 and 16 lower-case hex digits, and whether the trace is sampled. */
export interface SpanContext {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT_PATTERN = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_SPAN_ID = "0".repeat(16);

/**
 * Reads a `traceparent` header value. Version ff, all-zero ids and a version-00 value with more
 * fields are invalid (spec §3.2.2); a later version's extra fields are ignored, as the spec asks.
 */
export function parseTraceparent(text: string | null | undefined): SpanContext | null {
  const match = TRACEPARENT_PATTERN.exec((text ?? "").trim());
  if (match === null) return null;
  const [, version = "", traceId = "", spanId = "", flags = "", rest] = match;
  if (version === "ff" || (version === "00" && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return null;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** The `traceparent` of a span (version 00). */
export function formatTraceparent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.sampled ? "01" : "00"}`;
}

/** Random ids of a new trace and span; an all-zero draw (invalid) has its last bit set. */
export function newTraceId(random: (bytes: number) => Uint8Array): string {
  return nonZero(toHex(random(16), 16));
}

export function newSpanId(random: (bytes: number) => Uint8Array): string {
  return nonZero(toHex(random(8), 8));
}

/**
 * The span id of a task attempt's `invoke_agent` span, derived from its trace, task and attempt:
 * the next attempt links to the one before it without the room storing every attempt's id.
 * Two 32-bit FNV-1a hashes with different offsets, finished with murmur3's avalanche.
 */
export function toAttemptSpanId(traceId: string, taskId: string, attempt: number): string {
  return toHexId(toAttemptSpanIdBytes(traceId, taskId, attempt));
}

const ATTEMPT_SEED = 0x050c5d1f;

/** toAttemptSpanId's id as its 8 bytes (the agent writes ids into protobuf as bytes, never as hex). */
export function toAttemptSpanIdBytes(traceId: string, taskId: string, attempt: number): Uint8Array {
  const text = `${traceId}\n${taskId}\n${attempt}`;
  const high = hash32(text);
  const low = hash32(text, ATTEMPT_SEED);
  const bytes = new Uint8Array(8);
  for (let i = 0; i < 4; i += 1) {
    bytes[i] = high >>> (24 - 8 * i);
    bytes[4 + i] = low >>> (24 - 8 * i);
  }
  // nonZero's rule, on bytes: an all-zero id has its last bit set.
  if (high === 0 && low === 0) bytes[7] = 1;
  return bytes;
}

/**
 * newSpanId's id as its 8 bytes: `random`'s own bytes, not copied (the agent's pool never hands the
 * same bytes out twice), its last bit set when all are zero.
 */
export function newSpanIdBytes(random: (bytes: number) => Uint8Array): Uint8Array {
  const bytes = random(8);
  if (bytes.length < 8) throw new RangeError(`random(8) returned only ${bytes.length} bytes`);
  let any = 0;
  for (let i = 0; i < 8; i += 1) any |= bytes[i] ?? 0;
  if (any === 0) bytes[7] = 1;
  return bytes;
}

/** The bytes of an id in hex (a trace or span id of a SpanContext: checked as hex when parsed). */
export function toIdBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < bytes.length; i += 1) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/** An id's bytes as lower-case hex. */
export function toHexId(bytes: Uint8Array): string {
  return toHex(bytes, bytes.length);
}

/**
 * The sampling decision of OTEL_TRACES_SAMPLER=traceidratio for a trace id: sampled when its last 56
 * bits, read as a fraction of 2^56, are below `ratio` (the SDKs' TraceIdRatioBased reads the
 * randomness the same way, W3C Trace Context level 2's random trace-id flag).
 */
export function isSampled(traceId: string, ratio: number): boolean {
  if (ratio >= 1) return true;
  if (ratio <= 0) return false;
  // 56 bits as two 28-bit parts, compared part by part: their sum is not exact in a double.
  const high = Number.parseInt(traceId.slice(18, 25), 16);
  const low = Number.parseInt(traceId.slice(25, 32), 16);
  const threshold = ratio * 2 ** 28;
  const thresholdHigh = Math.floor(threshold);
  if (high !== thresholdHigh) return high < thresholdHigh;
  return low < (threshold - thresholdHigh) * 2 ** 28;
}

/** "00" … "ff": a span id is 8 lookups, not 8 toString and padStart calls. */
const HEX_BYTES = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

function toHex(bytes: Uint8Array, length: number): string {
  if (bytes.length < length) throw new RangeError(`random(${length}) returned only ${bytes.length} bytes`);
  let out = "";
  for (let i = 0; i < length; i += 1) out += HEX_BYTES[bytes[i] ?? 0];
  return out;
}

function nonZero(hex: string): string {
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}
