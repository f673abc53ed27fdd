// The prefix cache over loopback HTTP: a request that arrives while the first one with its prefix
// is still in its prefill misses; once that one's headers went out, the next one hits.
import { describe, expect, it } from "vitest";
import { chat, readAll, sseData, useMockModel } from "./test-helpers.ts";

const { mock } = await useMockModel();

/** A request of a 6,000-character shared system prompt (about 1,500 tokens) and its own task. */
const body = (task: string, extra: Record<string, unknown> = {}) => ({
  model: "mock-1",
  messages: [
    { role: "system", content: `You are a careful reviewer. ${"Rules of the house. ".repeat(300)}` },
    { role: "user", content: task },
  ],
  ...extra,
});

const cachedOf = async (res: Response): Promise<number> => {
  const json = (await res.json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } };
  return json.usage.prompt_tokens_details.cached_tokens;
};

describe("prefix cache over HTTP", () => {
  it("misses while the first request is in its prefill, hits once its headers went out", async () => {
    // The first request's headers (its prefill's end) come after a 3 s ttfb.
    const first = chat(mock, { body: body("task 1", { stream: true, stream_options: { include_usage: true } }), headers: { "x-mock-ttfb-ms": "3000" } });
    // The second, sent during that prefill: nothing is warm yet.
    const during = await chat(mock, { body: body("task 2") });
    expect(await cachedOf(during)).toBe(0);
    const firstText = (await readAll(await first)).text;
    const firstUsage = JSON.parse(sseData(firstText).at(-2) ?? "{}") as { usage?: { prompt_tokens_details?: { cached_tokens?: number } } };
    expect(firstUsage.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    // The third comes after: its shared prefix is cached, in 128-token blocks after the first 1,024.
    const after = await chat(mock, { body: body("task 3") });
    const cached = await cachedOf(after);
    expect(cached).toBeGreaterThanOrEqual(1_024);
    expect((cached - 1_024) % 128).toBe(0);
    expect(mock.stats().cached_tokens).toBe(cached);
  });

  it("skips a cached prefix's prefill: its headers and end come prefill_ms_per_1k_tokens per 1,000 cached tokens sooner", async () => {
    mock.setScenario({ ttfb_ms: 200, prefill_ms_per_1k_tokens: 50 });
    const cold = await chat(mock, { body: body("task 1") });
    expect(await cachedOf(cold)).toBe(0);
    expect(cold.headers.get("x-mock-prefill-skipped-ms")).toBeNull();
    const warm = await chat(mock, { body: body("task 2") });
    const cached = await cachedOf(warm);
    expect(cached).toBeGreaterThanOrEqual(1_024);
    expect(warm.headers.get("x-mock-prefill-skipped-ms")).toBe(String(Math.round((50 * cached) / 1_000)));
    // The prefill sits inside the time to first byte: with none, there is nothing to skip.
    mock.setScenario({ ttfb_ms: 0, prefill_ms_per_1k_tokens: 50 });
    await (await chat(mock, { body: body("task 3") })).json();
    const early = await chat(mock, { body: body("task 4") });
    expect(await cachedOf(early)).toBeGreaterThanOrEqual(1_024);
    expect(early.headers.get("x-mock-prefill-skipped-ms")).toBeNull();
  });

  it("is off with prefix_cache: false, and a short prompt is never cached", async () => {
    mock.setScenario({ prefix_cache: false });
    await (await chat(mock, { body: body("task 1") })).json();
    expect(await cachedOf(await chat(mock, { body: body("task 2") }))).toBe(0);
    mock.setScenario({});
    const short = {
      model: "mock-1",
      messages: [
        { role: "system", content: "short" },
        { role: "user", content: "x" },
      ],
    };
    await (await chat(mock, { body: short })).json();
    expect(await cachedOf(await chat(mock, { body: short }))).toBe(0);
  });
});
