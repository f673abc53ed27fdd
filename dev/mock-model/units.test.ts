// Unit tests for the pure modules: latency specs, fault picking, the RPM window, text/tokens, schema values, scenario parsing.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { FaultPicker, RpmLimiter } from "./faults.ts";
import { parseLatency, sampleLatency } from "./latency.ts";
import type { LatencySpec } from "./latency.ts";
import { createPrng } from "./prng.ts";
import { parseRatesCli, parseScenario } from "./scenario.ts";
import { valueForSchema } from "./schema.ts";
import { clipToTokens, countPromptTokens, countTokens, mockReply, splitForStream } from "./text.ts";

describe("latency", () => {
  it.each<[unknown, LatencySpec]>([
    [200, 200],
    ["200", 200],
    ["uniform:100:300", { dist: "uniform", min: 100, max: 300 }],
    ["normal:200:50", { dist: "normal", mean: 200, stddev: 50 }],
    ["lognormal:200:800", { dist: "lognormal", median: 200, p95: 800 }],
    [{ dist: "fixed", ms: 5 }, { dist: "fixed", ms: 5 }],
  ])("parses %j", (input, want) => {
    expect(parseLatency(input)).toEqual({ ok: true, value: want });
  });

  it.each([-1, "abc", "uniform:3:1", "normal:1", "lognormal:0:5", { dist: "poisson" }, null])("rejects %j", (input) => {
    expect(parseLatency(input).ok).toBe(false);
  });

  it("samples reproducibly within bounds", () => {
    const draw = (spec: LatencySpec, seed: number): number[] => {
      const prng = createPrng(seed);
      return Array.from({ length: 500 }, () => sampleLatency(spec, prng));
    };
    const uniform = draw({ dist: "uniform", min: 100, max: 300 }, 1);
    expect(uniform).toEqual(draw({ dist: "uniform", min: 100, max: 300 }, 1));
    expect(uniform).not.toEqual(draw({ dist: "uniform", min: 100, max: 300 }, 2));
    expect(Math.min(...uniform)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...uniform)).toBeLessThanOrEqual(300);
    expect(Math.min(...draw({ dist: "normal", mean: 10, stddev: 100 }, 3))).toBe(0);
    const logn = draw({ dist: "lognormal", median: 200, p95: 800 }, 4).sort((a, b) => a - b);
    expect(logn[250]).toBeGreaterThan(150);
    expect(logn[250]).toBeLessThan(260);
    expect(logn[475]).toBeGreaterThan(500);
    expect(sampleLatency(undefined, createPrng(1))).toBe(0);
  });
});

describe("FaultPicker", () => {
  it("consumes the script, then draws from rates", () => {
    const p = new FaultPicker(["429", "ok", "hang"], {}, createPrng(1));
    expect([p.pick(), p.pick(), p.pick(), p.pick()]).toEqual(["429", undefined, "hang", undefined]);
    expect(p.remainingScript()).toEqual([]);
  });

  it("hits each rate roughly in proportion", () => {
    const p = new FaultPicker([], { "500": 0.2, "429": 0.3 }, createPrng(9));
    const counts = new Map<string, number>();
    for (let i = 0; i < 5000; i++) {
      const k = p.pick() ?? "ok";
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    expect(counts.get("500")).toBeGreaterThan(800);
    expect(counts.get("500")).toBeLessThan(1200);
    expect(counts.get("429")).toBeGreaterThan(1300);
    expect(counts.get("429")).toBeLessThan(1700);
  });
});

describe("RpmLimiter", () => {
  it("admits N per sliding minute per key and tells when to retry", () => {
    const rpm = new RpmLimiter(2);
    expect(rpm.admit("a", 0)).toMatchObject({ ok: true, remaining: 1 });
    expect(rpm.admit("a", 10_000)).toMatchObject({ ok: true, remaining: 0 });
    expect(rpm.admit("a", 20_000)).toEqual({ ok: false, retryAfterMs: 40_000 });
    expect(rpm.admit("b", 20_000).ok).toBe(true);
    expect(rpm.admit("a", 60_001)).toMatchObject({ ok: true });
    expect(rpm.admit("a", 60_002)).toEqual({ ok: false, retryAfterMs: 9_998 });
  });
});

describe("text and tokens", () => {
  it("counts ceil(chars/4), 4 per message, and clips", () => {
    expect(countTokens("")).toBe(0);
    expect(countTokens("abcde")).toBe(2);
    expect(countPromptTokens([{ role: "user", content: "abcd" }, { role: "assistant", content: null }], undefined)).toBe(1 + 4 + 4);
    expect(clipToTokens("abcdefghij", 2)).toEqual({ text: "abcdefgh", clipped: true });
    expect(clipToTokens("abc", 2)).toEqual({ text: "abc", clipped: false });
  });

  it("makes deterministic [mock] text, optionally of an exact token length", () => {
    const a = mockReply("00ff00ff".repeat(8), "12345678");
    expect(a).toBe(mockReply("00ff00ff".repeat(8), "12345678"));
    expect(a.startsWith("[mock] reply to 12345678: ")).toBe(true);
    expect(countTokens(mockReply("ab".repeat(32), "x", 500))).toBe(500);
  });

  it("splits for streaming without losing text", () => {
    const text = mockReply("cd".repeat(32), "x", 200);
    const parts = splitForStream(text, 40);
    expect(parts.join("")).toBe(text);
    expect(parts.length).toBeGreaterThan(5);
  });
});

describe("valueForSchema", () => {
  const schemas: Array<[string, Parameters<typeof z.fromJSONSchema>[0]]> = [
    ["empty schema", {}],
    ["string enum", { type: "string", enum: ["x", "y"] }],
    ["integer exclusive bounds", { type: "integer", exclusiveMinimum: 4.5, exclusiveMaximum: 9 }],
    ["negative-only number", { type: "number", maximum: -3 }],
    ["open float interval", { type: "number", exclusiveMinimum: 1, exclusiveMaximum: 2 }],
    ["array bounds", { type: "array", items: { type: "boolean" }, minItems: 3, maxItems: 4 }],
    ["tuple", { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: false }],
    ["oneOf objects", { oneOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { type: "null" }] }],
    ["nullable type array", { type: ["string", "null"], maxLength: 3 }],
    ["formats", { type: "object", properties: { u: { type: "string", format: "uuid" }, d: { type: "string", format: "date" } }, required: ["u", "d"], additionalProperties: false }],
  ];
  it.each(schemas)("%s", (_name, schema) => {
    const value = valueForSchema(schema, "tag");
    expect(z.fromJSONSchema(schema).safeParse(value).error).toBeUndefined();
    expect(valueForSchema(schema, "tag")).toEqual(value);
  });

  it("marks open objects as mock and recursion terminates", () => {
    expect(valueForSchema({ type: "object", properties: { n: { type: "integer" } } }, "t")).toEqual({ mock: true, n: 0 });
    const recursive = { $defs: { node: { type: "object", properties: { next: { $ref: "#/$defs/node" } } } }, $ref: "#/$defs/node" };
    expect(JSON.stringify(valueForSchema(recursive, "t")).length).toBeLessThan(1000);
  });
});

describe("scenario parsing", () => {
  it("accepts the documented fields and rejects unknown ones", () => {
    const full = {
      seed: 3,
      latency: "normal:200:50",
      latency_by_model: { "kimi-k2.5": 400 },
      chunk_delay_ms: 5,
      rates: { "429": 0.2, hang: 0.01 },
      script: ["429", "ok"],
      retry_after_s: 2,
      rpm_per_key: 60,
    };
    expect(parseScenario(full)).toEqual({ ok: true, value: { ...full, latency: { dist: "normal", mean: 200, stddev: 50 } } });
    for (const bad of [{ rates: { "429": 2 } }, { script: ["boom"] }, { seed: 1.5 }, { rpm_per_key: -1 }, { nope: true }, "x"]) {
      expect(parseScenario(bad).ok).toBe(false);
    }
    expect(parseRatesCli("429=0.2,500=0.05")).toEqual({ ok: true, value: { "429": 0.2, "500": 0.05 } });
    expect(parseRatesCli("429").ok).toBe(false);
  });
});
