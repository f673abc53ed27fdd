// Tests the vendor usage shapes over real loopback HTTP: the engine's normalizer (src/core/usage.ts)
// reads every shape, streamed or not, to exactly the normalized counts /stats reports per model,
// and the official openai SDK parses every shape.

import { describe, expect, it } from "vitest";
import { extractStreamUsage, normalizeUsage } from "../../src/core/usage.ts";
import type { Usage as LedgerUsage } from "../../src/core/usage.ts";
import { chat, sseData, userBody, useMockModel } from "./test-helpers.ts";
import { USAGE_SHAPES } from "./server.ts";
import type { TokenCounts, UsageShape } from "./server.ts";

const { mock, client } = await useMockModel();

/** One model per shape, so per-model stats are per-shape stats. */
const modelOf = (shape: UsageShape): string => `model-${shape}`;
const byModel = Object.fromEntries(USAGE_SHAPES.map((s) => [modelOf(s), s]));

type Ledger = Record<string, LedgerUsage & { calls: number }>;

/** What an honest ledger records: normalizeUsage of each response's usage, summed per model. */
function record(ledger: Ledger, model: string, raw: unknown): void {
  const u = normalizeUsage(raw);
  expect(u).not.toBeNull();
  if (u === null) return;
  ledger[model] ??= { calls: 0, prompt_tokens: 0, cached_tokens: 0, completion_tokens: 0, reasoning_tokens: 0, total_tokens: 0 };
  const e = ledger[model];
  e.calls++;
  for (const k of ["prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens", "total_tokens"] as const) e[k] += u[k];
}

const ledgerView = (t: TokenCounts | undefined): Record<string, number> | undefined =>
  t && {
    calls: t.usage_reports,
    prompt_tokens: t.prompt_tokens,
    cached_tokens: t.cached_tokens,
    completion_tokens: t.completion_tokens,
    reasoning_tokens: t.reasoning_tokens,
    total_tokens: t.total_tokens,
  };

interface Chunk {
  choices: Array<{ delta: { content?: string }; finish_reason: string | null; usage?: unknown }>;
  usage?: unknown;
}

/** Streams one request and returns the parsed chunks (without [DONE]). */
async function streamChunks(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Chunk[]> {
  const res = await chat(mock, { body: { ...body, stream: true }, headers });
  expect(res.status).toBe(200);
  const data = sseData(await res.text());
  expect(data.at(-1)).toBe("[DONE]");
  return data.slice(0, -1).map((d) => JSON.parse(d) as Chunk);
}

/** The single usage a stream carries, read the way the engine reads it. */
function streamUsage(chunks: readonly unknown[]): unknown {
  const found = chunks.map((c) => extractStreamUsage(c)).filter((u) => u !== undefined);
  expect(found).toHaveLength(1);
  return found[0];
}

describe("usage shapes", () => {
  it.each(USAGE_SHAPES)("%s: non-stream and stream usage normalize to exactly the /stats counts", async (shape) => {
    mock.setScenario({ usage_shape_by_model: byModel, cached_share: 0.5 });
    const model = modelOf(shape);
    const ledger: Ledger = {};
    const prompts = ["a fairly long prompt so that half of it is a cache hit", "short", "x".repeat(333)];
    for (const [i, content] of prompts.entries()) {
      const extra = i === 2 ? { max_tokens: 7 } : {};
      const res = await chat(mock, { body: userBody(content, { model, ...extra }) });
      const body = (await res.json()) as { usage: unknown };
      record(ledger, model, body.usage);
      const chunks = await streamChunks(userBody(content, { model, stream_options: { include_usage: true }, ...extra }));
      record(ledger, model, streamUsage(chunks));
    }
    const s = mock.stats();
    expect(ledgerView(s.by_model[model])).toEqual(ledger[model]);
    expect(s.by_model[model]?.calls).toBe(6);
    // The invariants of the ledger view hold, and cached pricing is exercised where the shape reports it.
    const t = s.by_model[model];
    expect(t?.total_tokens).toBe((t?.prompt_tokens ?? NaN) + (t?.completion_tokens ?? NaN));
    const reportsCached = ["openai", "deepseek", "kimi", "anthropic"].includes(shape);
    expect((t?.cached_tokens ?? 0) > 0).toBe(reportsCached);
    expect((t?.reasoning_tokens ?? 0) > 0).toBe(shape === "gemini");
    expect(t?.cached_tokens).toBeLessThanOrEqual(t?.prompt_tokens ?? 0);
  });

  it("raw vendor fields are summed in /stats next to the normalized counts", async () => {
    mock.setScenario({ usage_shape: "deepseek", cached_share: 0.5 });
    const res = await chat(mock, { body: userBody("12345678", { model: "deepseek-v3.2" }) }); // 2 + 4 = 6 prompt tokens
    const body = (await res.json()) as { usage: Record<string, unknown> };
    expect(body.usage).toMatchObject({ prompt_tokens: 6, prompt_cache_hit_tokens: 3, prompt_cache_miss_tokens: 3 });
    expect(body.usage).not.toHaveProperty("prompt_tokens_details");
    const s = mock.stats();
    expect(s.raw).toMatchObject({ prompt_tokens: 6, prompt_cache_hit_tokens: 3, prompt_cache_miss_tokens: 3, "completion_tokens_details.reasoning_tokens": 0 });
    expect(s.by_model["deepseek-v3.2"]?.raw).toEqual(s.raw);
    expect(s).toMatchObject({ usage_reports: 1, prompt_tokens: 6, cached_tokens: 3 });

    // Gemini: total_tokens on the wire exceeds prompt + completion; the normalized total includes it.
    mock.setScenario({ usage_shape: "gemini" });
    mock.resetStats();
    const g = (await (await chat(mock, { body: userBody("hi", { model: "gemini-2.5-flash" }), headers: { "x-mock-output-tokens": "20" } })).json()) as {
      usage: Record<string, number>;
    };
    expect(g.usage).toEqual({ prompt_tokens: 5, completion_tokens: 20, total_tokens: 35 });
    expect(mock.stats()).toMatchObject({
      prompt_tokens: 5,
      completion_tokens: 30,
      reasoning_tokens: 10,
      total_tokens: 35,
      raw: { prompt_tokens: 5, completion_tokens: 20, total_tokens: 35 },
    });
  });

  it("kimi streams put usage in choices[0].usage of the finish chunk (no usage chunk), even without include_usage", async () => {
    mock.setScenario({ usage_shape: "kimi", cached_share: 0.5 });
    for (const streamOptions of [{ include_usage: true }, undefined]) {
      const chunks = await streamChunks(userBody("kimi usage", { model: "kimi-k2.5", ...(streamOptions ? { stream_options: streamOptions } : {}) }));
      const last = chunks.at(-1);
      expect(last?.choices[0]?.finish_reason).toBe("stop");
      expect(last?.choices[0]?.usage).toMatchObject({ prompt_tokens: 7, cached_tokens: 3 });
      expect(chunks.every((c) => c.choices.length === 1 && !("usage" in c))).toBe(true);
      expect(chunks.slice(0, -1).every((c) => c.choices[0]?.usage === undefined)).toBe(true);
      expect(normalizeUsage(streamUsage(chunks))).toMatchObject({ prompt_tokens: 7, cached_tokens: 3 });
    }
    expect(mock.stats()).toMatchObject({ usage_reports: 2, prompt_tokens: 14, cached_tokens: 6 });
  });

  it("selection: x-mock-usage-shape header > usage_shape_by_model > usage_shape > openai; a bad header is 400", async () => {
    const usageOf = async (model: string, headers: Record<string, string> = {}): Promise<Record<string, unknown>> =>
      ((await (await chat(mock, { body: userBody("sel", { model }), headers })).json()) as { usage: Record<string, unknown> }).usage;
    expect(await usageOf("m")).toHaveProperty("prompt_tokens_details.cached_tokens", 0);
    mock.setScenario({ usage_shape: "ollama", usage_shape_by_model: { v: "vllm" } });
    expect(Object.keys(await usageOf("m"))).toEqual(["prompt_tokens", "completion_tokens", "total_tokens"]);
    expect(await usageOf("v")).toHaveProperty("prompt_tokens_details", null);
    expect(await usageOf("v", { "x-mock-usage-shape": "deepseek" })).toHaveProperty("prompt_cache_miss_tokens");
    const bad = await chat(mock, { headers: { "x-mock-usage-shape": "bedrock" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("invalid_mock_header");
  });

  it("a mixed run: the ledger built from normalizeUsage(extractStreamUsage(...)) equals /stats per model exactly", async () => {
    mock.setScenario({ usage_shape_by_model: byModel, cached_share: 0.3 });
    const ledger: Ledger = {};
    const jobs: Array<Promise<void>> = [];
    for (let i = 0; i < 70; i++) {
      const shape = USAGE_SHAPES[i % USAGE_SHAPES.length] ?? "openai";
      const model = modelOf(shape);
      const body = userBody(`task ${i} ${"ctx ".repeat(i)}`, { model, ...(i % 3 === 0 ? { max_tokens: 5 + i } : {}) });
      jobs.push(
        i % 2 === 0
          ? chat(mock, { body })
              .then((r) => r.json() as Promise<{ usage: unknown }>)
              .then((b) => record(ledger, model, b.usage))
          : streamChunks({ ...body, stream_options: { include_usage: true } }).then((chunks) => record(ledger, model, streamUsage(chunks))),
      );
    }
    await Promise.all(jobs);
    const s = mock.stats();
    for (const shape of USAGE_SHAPES) expect(ledgerView(s.by_model[modelOf(shape)])).toEqual(ledger[modelOf(shape)]);
    const sum = (k: keyof LedgerUsage): number => Object.values(ledger).reduce((acc, e) => acc + e[k], 0);
    expect(s).toMatchObject({
      usage_reports: 70,
      prompt_tokens: sum("prompt_tokens"),
      cached_tokens: sum("cached_tokens"),
      completion_tokens: sum("completion_tokens"),
      reasoning_tokens: sum("reasoning_tokens"),
      total_tokens: sum("total_tokens"),
    });
  });

  it.each(USAGE_SHAPES)("%s: the openai SDK parses it (non-stream and stream)", async (shape) => {
    mock.setScenario({ usage_shape: shape, cached_share: 0.5 });
    const c = await client.chat.completions.create({ model: "any", messages: [{ role: "user", content: "sdk check" }] });
    expect(c.choices[0]?.message.content?.startsWith("[mock]")).toBe(true);
    expect(c.usage?.prompt_tokens).toBe(7);
    const once = normalizeUsage(c.usage);
    expect(once).not.toBeNull();

    const stream = await client.chat.completions.create({
      model: "any",
      messages: [{ role: "user", content: "sdk check" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = "";
    const chunks: unknown[] = [];
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? "";
      chunks.push(chunk);
    }
    expect(content).toBe(c.choices[0]?.message.content);
    expect(normalizeUsage(streamUsage(chunks))).toEqual(once);
    const s = mock.stats();
    expect(ledgerView(s.by_model.any)).toEqual({
      calls: 2,
      prompt_tokens: 2 * (once?.prompt_tokens ?? NaN),
      cached_tokens: 2 * (once?.cached_tokens ?? NaN),
      completion_tokens: 2 * (once?.completion_tokens ?? NaN),
      reasoning_tokens: 2 * (once?.reasoning_tokens ?? NaN),
      total_tokens: 2 * (once?.total_tokens ?? NaN),
    });
  });
});
