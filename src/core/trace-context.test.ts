import { describe, expect, it } from "vitest";
import { formatTraceparent, isSampled, newSpanId, newTraceId, parseTraceparent, toAttemptSpanId } from "./trace-context.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

describe("parseTraceparent", () => {
  it.each<[string, string | null | undefined, ReturnType<typeof parseTraceparent>]>([
    ["the spec's example, sampled", `00-${TRACE}-${SPAN}-01`, { traceId: TRACE, spanId: SPAN, sampled: true }],
    ["not sampled", `00-${TRACE}-${SPAN}-00`, { traceId: TRACE, spanId: SPAN, sampled: false }],
    ["other flags, sampled bit set", `00-${TRACE}-${SPAN}-03`, { traceId: TRACE, spanId: SPAN, sampled: true }],
    ["a later version with more fields", `01-${TRACE}-${SPAN}-01-extra`, { traceId: TRACE, spanId: SPAN, sampled: true }],
    ["version 00 with more fields", `00-${TRACE}-${SPAN}-01-extra`, null],
    ["version ff", `ff-${TRACE}-${SPAN}-01`, null],
    ["all-zero trace id", `00-${"0".repeat(32)}-${SPAN}-01`, null],
    ["all-zero span id", `00-${TRACE}-${"0".repeat(16)}-01`, null],
    ["upper-case hex", `00-${TRACE.toUpperCase()}-${SPAN}-01`, null],
    ["short trace id", `00-${TRACE.slice(1)}-${SPAN}-01`, null],
    ["empty", "", null],
    ["null", null, null],
    ["undefined", undefined, null],
  ])("%s", (_name, text, expected) => {
    expect(parseTraceparent(text)).toEqual(expected);
  });

  it("round-trips through formatTraceparent", () => {
    for (const sampled of [true, false]) {
      const context = { traceId: TRACE, spanId: SPAN, sampled };
      expect(parseTraceparent(formatTraceparent(context))).toEqual(context);
    }
  });
});

describe("ids", () => {
  it.each<[string, (random: (n: number) => Uint8Array) => string, number]>([
    ["trace id", newTraceId, 32],
    ["span id", newSpanId, 16],
  ])("a %s is lower-case hex of its length, never all zero", (_name, make, length) => {
    expect(make((n) => new Uint8Array(n).fill(0xab))).toBe("ab".repeat(length / 2));
    const zero = make((n) => new Uint8Array(n));
    expect(zero).toMatch(new RegExp(`^0{${length - 1}}1$`));
    expect(() => make(() => new Uint8Array(2))).toThrow(RangeError);
  });

  it("an attempt's span id is fixed by its trace, task and attempt, and differs between them", () => {
    const a1 = toAttemptSpanId(TRACE, "t-1", 1);
    expect(a1).toMatch(/^[0-9a-f]{16}$/);
    expect(toAttemptSpanId(TRACE, "t-1", 1)).toBe(a1);
    const others = [toAttemptSpanId(TRACE, "t-1", 2), toAttemptSpanId(TRACE, "t-2", 1), toAttemptSpanId(`${TRACE.slice(0, -1)}7`, "t-1", 1)];
    expect(new Set([a1, ...others]).size).toBe(4);
  });
});

describe("isSampled", () => {
  it.each<[string, string, number, boolean]>([
    ["ratio 1 keeps every trace", "f".repeat(32), 1, true],
    ["ratio 0 keeps none", `${"0".repeat(31)}1`, 0, false],
    ["low randomness under 0.5", `${"f".repeat(18)}${"0".repeat(14)}`, 0.5, true],
    ["high randomness over 0.5", `${"0".repeat(18)}${"f".repeat(14)}`, 0.5, false],
    ["just under the 0.25 line", `${"0".repeat(18)}3${"f".repeat(13)}`, 0.25, true],
    ["on the 0.25 line", `${"0".repeat(18)}4${"0".repeat(13)}`, 0.25, false],
  ])("%s", (_name, traceId, ratio, expected) => {
    expect(isSampled(traceId, ratio)).toBe(expected);
  });
});
