// Unit tests for the pure modules: latency specs, fault picking, the RPM/TPM windows, usage shapes, text/tokens, schema values
// (valid and invalid), scenario parsing, tool dialects and tool choice, planner, reducer, webhook signatures and findings.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { normalizeUsage } from "../../src/core/usage.ts";
import { FaultPicker, RpmLimiter, TpmLimiter } from "./faults.ts";
import { meanLatencyMs, p95LatencyMs, parseLatency, sampleLatency } from "./latency.ts";
import type { LatencySpec } from "./latency.ts";
import { createPrng } from "./prng.ts";
import { parseRatesCli, parseScenario } from "./scenario.ts";
import { directive, firstUrl, readConversation } from "./conversation.ts";
import { planTasks, readPlannerRequest } from "./planner.ts";
import { REDUCER_MAX_CHARS, readResults, reducerAnswer } from "./reducer.ts";
import { invalidJsonForSchema, valueForSchema } from "./schema.ts";
import { mentionedTools } from "./tool-calls.ts";
import { defaultToolDialect, streamToolCallDeltas, toolCallId } from "./tool-dialect.ts";
import { lintFindings, signWebhook, verifyWebhookSignature } from "./webhook.ts";
import { clipToTokens, countPromptTokens, countTokens, mockReply, splitForStream } from "./text.ts";
import { USAGE_SHAPES, usageReport } from "./usage.ts";

describe("latency", () => {
  it.each<[unknown, LatencySpec]>([
    [200, 200],
    ["200", 200],
    ["uniform:100:300", { dist: "uniform", min: 100, max: 300 }],
    ["normal:200:50", { dist: "normal", mean: 200, stddev: 50 }],
    ["lognormal:200:800", { dist: "lognormal", median: 200, p95: 800 }],
    [
      { dist: "fixed", ms: 5 },
      { dist: "fixed", ms: 5 },
    ],
  ])("parses %j", (input, want) => {
    expect(parseLatency(input)).toEqual({ ok: true, value: want });
  });

  it.each([-1, "abc", "", " ", "uniform:3:1", "normal:1", "lognormal:0:5", { dist: "poisson" }, null])("rejects %j", (input) => {
    expect(parseLatency(input).ok).toBe(false);
  });

  it.each(["abc", "", "soon"])("names a latency that is no number, %j, and the forms it takes", (input) => {
    expect(parseLatency(input)).toEqual({
      ok: false,
      error: `latency: bad latency "${input}" (want MS, uniform:MIN:MAX, normal:MEAN:SD or lognormal:MEDIAN:P95)`,
    });
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

  // Mean and p95 in closed form, checked against 20,000 seeded draws (sampling rounds to whole ms).
  it.each<[string, LatencySpec | undefined, number, number]>([
    ["none", undefined, 0, 0],
    ["fixed number", 200, 200, 200],
    ["fixed object", { dist: "fixed", ms: 75 }, 75, 75],
    ["uniform", { dist: "uniform", min: 100, max: 300 }, 200, 290],
    ["normal", { dist: "normal", mean: 200, stddev: 50 }, 200, 282.24],
    ["normal clamped at 0", { dist: "normal", mean: 10, stddev: 100 }, 45.14, 174.49],
    // sigma = ln(1500/300)/1.6449 = 0.97845, mean = 300·exp(sigma²/2) = 484.19
    ["lognormal", { dist: "lognormal", median: 300, p95: 1500 }, 484.19, 1500],
    ["lognormal, p95 = median", { dist: "lognormal", median: 300, p95: 300 }, 300, 300],
  ])("meanLatencyMs and p95LatencyMs: %s", (_name, spec, mean, p95) => {
    expect(meanLatencyMs(spec)).toBeCloseTo(mean, 1);
    expect(p95LatencyMs(spec)).toBeCloseTo(p95, 1);
    const prng = createPrng(11);
    const draws = Array.from({ length: 20_000 }, () => sampleLatency(spec, prng)).sort((a, b) => a - b);
    const sampledMean = draws.reduce((a, b) => a + b, 0) / draws.length;
    expect(Math.abs(sampledMean - mean)).toBeLessThanOrEqual(Math.max(1, mean * 0.03));
    expect(Math.abs((draws[Math.ceil(0.95 * draws.length) - 1] ?? NaN) - p95)).toBeLessThanOrEqual(Math.max(1, p95 * 0.04));
  });

  // The mean of max(L, t), what a streamed call lasts with a ttfb t, against the same seeded draws.
  it.each<[string, LatencySpec | undefined, number]>([
    ["none", undefined, 300],
    ["fixed below t", 200, 300],
    ["fixed above t", 500, 300],
    ["uniform, t inside", { dist: "uniform", min: 100, max: 300 }, 200],
    ["uniform, t below", { dist: "uniform", min: 100, max: 300 }, 50],
    ["uniform, t above", { dist: "uniform", min: 100, max: 300 }, 400],
    ["normal", { dist: "normal", mean: 200, stddev: 50 }, 220],
    ["lognormal", { dist: "lognormal", median: 300, p95: 1500 }, 300],
    ["lognormal, t far out", { dist: "lognormal", median: 300, p95: 1500 }, 5000],
    ["lognormal, p95 = median", { dist: "lognormal", median: 300, p95: 300 }, 200],
  ])("meanLatencyMs(spec, t) is the mean of max(L, t): %s", (_name, spec, t) => {
    const prng = createPrng(13);
    const draws = Array.from({ length: 20_000 }, () => Math.max(sampleLatency(spec, prng), t));
    const sampled = draws.reduce((a, b) => a + b, 0) / draws.length;
    expect(Math.abs(meanLatencyMs(spec, t) - sampled)).toBeLessThanOrEqual(Math.max(1, sampled * 0.03));
    expect(meanLatencyMs(spec, t)).toBeGreaterThanOrEqual(Math.max(meanLatencyMs(spec), t) - 1e-9);
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

describe("RpmLimiter check/record", () => {
  it("check records nothing; record counts", () => {
    const rpm = new RpmLimiter(1);
    expect(rpm.check("a", 0)).toMatchObject({ ok: true, remaining: 0 });
    expect(rpm.check("a", 0)).toMatchObject({ ok: true, remaining: 0 });
    rpm.record("a", 0);
    expect(rpm.check("a", 5)).toEqual({ ok: false, retryAfterMs: 59_995 });
  });
});

describe("TpmLimiter", () => {
  it("admits while window + reservation ≤ limit, settles to the actual total, and slides", () => {
    const tpm = new TpmLimiter(100);
    const a = tpm.admit("k", 0, 60);
    expect(a).toMatchObject({ ok: true, remaining: 40, resetMs: 60_000 });
    expect(tpm.admit("k", 1_000, 41)).toEqual({ ok: false, used: 60, retryAfterMs: 59_000 });
    if (a.ok) a.ticket.settle(20); // the answer was smaller than its reservation
    expect(tpm.used("k", 1_000)).toBe(20);
    const b = tpm.admit("k", 1_000, 80);
    expect(b).toMatchObject({ ok: true, remaining: 0 });
    if (b.ok) {
      b.ticket.settle(30);
      b.ticket.settle(999); // only the first settlement counts
    }
    expect(tpm.used("k", 2_000)).toBe(50);
    // 50 + 60 > 100: freeing the first entry (20, at 0 s) is enough.
    expect(tpm.admit("k", 2_000, 60)).toEqual({ ok: false, used: 50, retryAfterMs: 58_000 });
    // 50 + 80 > 100: freeing the first entry is not enough, the second (at 1 s) is.
    expect(tpm.admit("k", 2_000, 80)).toEqual({ ok: false, used: 50, retryAfterMs: 59_000 });
    expect(tpm.admit("other", 2_000, 100).ok).toBe(true);
    expect(tpm.used("k", 60_000)).toBe(30); // the entry at 0 slid out
    expect(tpm.admit("k", 61_000, 100).ok).toBe(true); // both slid out
    // A request larger than the limit can never be admitted.
    expect(tpm.admit("z", 0, 101)).toEqual({ ok: false, used: 0, retryAfterMs: undefined });
  });

  it("a settlement after the entry slid out changes nothing", () => {
    const tpm = new TpmLimiter(100);
    const a = tpm.admit("k", 0, 50);
    expect(tpm.used("k", 60_000)).toBe(0);
    if (a.ok) a.ticket.settle(10);
    expect(tpm.used("k", 60_000)).toBe(0);
  });
});

describe("usageReport", () => {
  const base = { prompt_tokens: 101, completion_tokens: 31, total_tokens: 132 };
  it.each(USAGE_SHAPES)("%s: src/core normalizeUsage reads exactly the mock's normalized counts", (shape) => {
    for (const cachedShare of [0, 0.5, 1]) {
      for (const maxTokens of [undefined, 31, 40, 1000]) {
        const r = usageReport(base, shape, { cachedShare, maxTokens });
        expect(normalizeUsage(JSON.parse(JSON.stringify(r.wire)))).toEqual(r.normalized);
      }
    }
  });

  it("shapes carry the vendor fields", () => {
    const opts = { cachedShare: 0.5 };
    expect(usageReport(base, "openai", opts).wire).toMatchObject({
      prompt_tokens: 101,
      prompt_tokens_details: { cached_tokens: 50 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });
    expect(usageReport(base, "deepseek", opts).wire).toEqual({
      prompt_tokens: 101,
      completion_tokens: 31,
      total_tokens: 132,
      prompt_cache_hit_tokens: 50,
      prompt_cache_miss_tokens: 51,
      completion_tokens_details: { reasoning_tokens: 0 },
    });
    expect(usageReport(base, "kimi", opts).wire).toEqual({ prompt_tokens: 101, completion_tokens: 31, total_tokens: 132, cached_tokens: 50 });
    expect(usageReport(base, "anthropic", opts).wire).toEqual({
      prompt_tokens: 101,
      completion_tokens: 31,
      total_tokens: 132,
      prompt_tokens_details: { cached_tokens: 50 },
    });
    expect(usageReport(base, "vllm", opts).wire).toEqual({ prompt_tokens: 101, completion_tokens: 31, total_tokens: 132, prompt_tokens_details: null });
    expect(usageReport(base, "ollama", opts).wire).toEqual({ prompt_tokens: 101, completion_tokens: 31, total_tokens: 132 });
    const gemini = usageReport(base, "gemini", opts);
    expect(gemini.wire).toEqual({ prompt_tokens: 101, completion_tokens: 31, total_tokens: 147 });
    expect(gemini.normalized).toEqual({ prompt_tokens: 101, cached_tokens: 0, completion_tokens: 46, reasoning_tokens: 15, total_tokens: 147 });
    // Thoughts count toward max_tokens: visible + thoughts ≤ max_tokens.
    expect(usageReport(base, "gemini", { maxTokens: 40 }).wire.total_tokens).toBe(141);
    expect(usageReport(base, "gemini", { maxTokens: 31 }).wire.total_tokens).toBe(132);
  });
});

describe("text and tokens", () => {
  it("counts ceil(chars/4), 4 per message, and clips", () => {
    expect(countTokens("")).toBe(0);
    expect(countTokens("abcde")).toBe(2);
    expect(
      countPromptTokens(
        [
          { role: "user", content: "abcd" },
          { role: "assistant", content: null },
        ],
        undefined,
      ),
    ).toBe(1 + 4 + 4);
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
    [
      "formats",
      {
        type: "object",
        properties: { u: { type: "string", format: "uuid" }, d: { type: "string", format: "date" } },
        required: ["u", "d"],
        additionalProperties: false,
      },
    ],
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
      ttfb_ms: 120,
      chunk_delay_ms: 5,
      rates: { "429": 0.2, hang: 0.01 },
      script: ["429", "ok"],
      retry_after_s: 2,
      rpm_per_key: 60,
      tpm_per_key: 100_000,
      usage_shape: "deepseek",
      usage_shape_by_model: { "kimi-k2.5": "kimi" },
      cached_share: 0.25,
      tool_dialect: "gemini",
      tool_dialect_by_model: { "kimi-k2.5": "args_object" },
      invalid_json: 2,
      invalid_plans: 0,
    };
    expect(parseScenario(full)).toEqual({ ok: true, value: { ...full, latency: { dist: "normal", mean: 200, stddev: 50 } } });
    for (const bad of [
      { rates: { "429": 2 } },
      { script: ["boom"] },
      { seed: 1.5 },
      { rpm_per_key: -1 },
      { tpm_per_key: 1.5 },
      { usage_shape: "bedrock" },
      { usage_shape_by_model: { m: "x" } },
      { cached_share: 1.5 },
      { tool_dialect: "bedrock" },
      { tool_dialect_by_model: { m: "x" } },
      { invalid_json: -1 },
      { invalid_plans: 0.5 },
      { ttfb_ms: -1 },
      { ttfb_ms: "50" },
      { ttfb_ms: 600_001 },
      { nope: true },
      "x",
    ]) {
      expect(parseScenario(bad).ok).toBe(false);
    }
    expect(parseRatesCli("429=0.2,500=0.05")).toEqual({ ok: true, value: { "429": 0.2, "500": 0.05 } });
    expect(parseRatesCli("429").ok).toBe(false);
  });
});

describe("invalidJsonForSchema", () => {
  const cases: Array<[string, Parameters<typeof z.fromJSONSchema>[0], "json" | "text"]> = [
    ["required property dropped", { type: "object", properties: { a: { type: "string" }, b: { type: "integer" } }, required: ["a", "b"] }, "json"],
    ["wrong property type (nothing required)", { type: "object", properties: { a: { type: "number" } } }, "json"],
    ["enum property gets another type", { type: "object", properties: { k: { enum: ["x", "y"] } } }, "json"],
    ["extra property where none are allowed", { type: "object", properties: { a: {} }, additionalProperties: false }, "json"],
    ["$ref at the top", { $defs: { o: { type: "object", properties: { id: { type: "string" } }, required: ["id"] } }, $ref: "#/$defs/o" }, "json"],
    ["top-level string", { type: "string" }, "json"],
    ["nullable number", { type: ["number", "null"] }, "json"],
    ["anything", {}, "text"],
  ];
  it.each(cases)("%s", (_name, schema, kind) => {
    const text = invalidJsonForSchema(schema, "tag");
    expect(invalidJsonForSchema(schema, "tag")).toBe(text);
    if (kind === "text") {
      expect(() => JSON.parse(text) as unknown).toThrow();
      return;
    }
    expect(z.fromJSONSchema(schema).safeParse(JSON.parse(text)).success).toBe(false);
    // The valid value passes the same check, so the violation is the mock's doing.
    expect(z.fromJSONSchema(schema).safeParse(valueForSchema(schema, "tag")).success).toBe(true);
  });
});

describe("tool dialects and tool choice", () => {
  it("maps model names to dialects by prefix (after any vendor/)", () => {
    expect(
      ["kimi-k2.5", "moonshotai/kimi-k2", "gemini-2.5-flash", "google/gemini-2.0", "claude-sonnet-4.5", "gpt-4.1", "mock-1", "my-kimi-x"].map(
        defaultToolDialect,
      ),
    ).toEqual(["kimi", "kimi", "gemini", "gemini", "anthropic", "openai", "openai", "openai"]);
  });

  it("issues ids per dialect and splits arguments into 2–3 non-empty fragments", () => {
    expect(toolCallId("kimi", "lookup", 4, "ab".repeat(8))).toBe("functions.lookup:4");
    expect(toolCallId("gemini", "lookup", 4, "ab".repeat(8))).toBe("");
    expect(toolCallId("anthropic", "lookup", 4, "ab".repeat(8))).toBe(`call_${"ab".repeat(8)}`);
    const call = (args: string) => ({ id: "call_x", type: "function" as const, function: { name: "f", arguments: args } });
    for (const [args, pieces] of [
      ["{}", 2],
      ['{"a":1}', 2],
      [`{"a":"${"x".repeat(30)}"}`, 3],
    ] as const) {
      const deltas = streamToolCallDeltas("openai", [call(args)]);
      expect(deltas).toHaveLength(1 + pieces);
      const texts = deltas.slice(1).map((d) => (d[0]?.function as { arguments: string } | undefined)?.arguments ?? "");
      expect(texts.every((t) => t.length > 0)).toBe(true);
      expect(texts.join("")).toBe(args);
    }
  });

  it("reads directives, URLs and mentioned tools", () => {
    expect(directive("a [mock:tool_turns=3] b [mock:tool_turns=5]", "tool_turns")).toBe(3);
    expect(directive("[mock:parallel=x]", "parallel")).toBeUndefined();
    expect(firstUrl("see (https://example.org/a?b=1), then http://x.test/y.")).toBe("https://example.org/a?b=1");
    const tools = ["get", "scratchpad_get", "http_fetch"].map((name) => ({ name, parameters: {} }));
    expect(mentionedTools(tools, "together: http_fetch, then scratchpad_get; http_fetch again").map((t) => t.name)).toEqual(["http_fetch", "scratchpad_get"]);
  });
});

describe("planner and reducer", () => {
  const conv = (user: string) =>
    readConversation([
      { role: "system", content: "[edgeswarm:planner]" },
      { role: "user", content: user },
    ]);

  it("reads max_tasks and the goal (same line or the lines after Goal:)", () => {
    expect(conv("x").role).toBe("planner");
    expect(readPlannerRequest(conv("max_tasks: 7\nGoal: build it\nwell"))).toEqual({ maxTasks: 7, goal: "build it\nwell" });
    expect(readPlannerRequest(conv("Context.\nGoal:\n- a\n- b\nmax_tasks: 2"))).toEqual({ maxTasks: 2, goal: "- a\n- b" });
    expect(readPlannerRequest(conv("just do it"))).toEqual({ maxTasks: 5, goal: "just do it" });
  });

  it("plans list lines or aspects, capped", () => {
    expect(planTasks("- a\n- b\n- c", 2)).toEqual([
      { id: "t1", prompt: "a" },
      { id: "t2", prompt: "b" },
    ]);
    expect(planTasks("one thing", 3).map((t) => t.id)).toEqual(["t1", "t2", "t3"]);
    expect(planTasks("x".repeat(500), 1)[0]?.prompt).toBe(`Investigate aspect 1 of: ${"x".repeat(200)}`);
  });

  it("reduces to at most 240 chars naming the count", () => {
    const text = Array.from({ length: 9 }, (_, i) => `<result id="id-${i}" extra="1">body ${i}</result>`).join("");
    expect(readResults(text).map((r) => r.id)).toEqual(Array.from({ length: 9 }, (_, i) => `id-${i}`));
    const out = reducerAnswer(text);
    expect(out.startsWith("[mock] reduced 9 results (id-0, id-1, id-2, …): digest ")).toBe(true);
    expect(out.length).toBeLessThanOrEqual(REDUCER_MAX_CHARS);
    expect(reducerAnswer("nothing")).toMatch(/^\[mock\] reduced 0 results \(\): digest /);
  });
});

describe("webhook", () => {
  it("verifies t=…,v1=… signatures with reasons", () => {
    const body = '{"a":1}';
    const now = 1_800_000_000;
    expect(verifyWebhookSignature("s", signWebhook("s", body, now), body, now + 300)).toEqual({ ok: true });
    expect(verifyWebhookSignature("s", signWebhook("s", body, now), body, now + 301)).toEqual({ ok: false, reason: "stale" });
    expect(verifyWebhookSignature("s", signWebhook("t", body, now), body, now)).toEqual({ ok: false, reason: "mismatch" });
    expect(verifyWebhookSignature("s", `t=${now},v1=abc`, body, now)).toEqual({ ok: false, reason: "mismatch" });
    expect(verifyWebhookSignature("s", "v1=00", body, now)).toEqual({ ok: false, reason: "malformed" });
    expect(verifyWebhookSignature("s", undefined, body, now)).toEqual({ ok: false, reason: "missing" });
  });

  it("finds at most 3 issues, rule hits first", () => {
    const many = JSON.stringify({ content: Array.from({ length: 6 }, () => "eval(x) // TODO").join("\n") });
    expect(lintFindings(many).map((f) => `${f.rule}@${f.line}`)).toEqual(["no-eval@1", "todo@1", "no-eval@2"]);
    for (let i = 0; i < 20; i++) {
      const f = lintFindings(JSON.stringify({ content: `clean ${i}` }));
      expect(f.length).toBeLessThanOrEqual(3);
      expect(f.every((x) => x.rule === "mock-style")).toBe(true);
    }
  });
});
