// Tests the mock's normal behaviour over real loopback HTTP: shapes, streaming via the openai SDK, JSON modes, latency, stats.

import type OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AUTH, KEY, chat, eventually, readAll, sseData, userBody, useMockModel } from "./test-helpers.ts";
import { DEFAULT_MODELS, keyIdOf, startMockModel } from "./server.ts";

const { mock, client } = await useMockModel();

const get = (path: string, headers: Record<string, string> = {}): Promise<Response> => fetch(`${mock.url}${path}`, { headers });

describe("non-streaming chat completion", () => {
  it("has the OpenAI shape, mock markers and usage", async () => {
    const res = await chat(mock, { body: userBody("hello there", { model: "gpt-4.1" }) });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-mock-model")).toBe("true");
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      object: "chat.completion",
      model: "gpt-4.1",
      system_fingerprint: "mock",
      choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant" } }],
      usage: { prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } },
    });
    expect(String(body.id)).toMatch(/^chatcmpl-mock-/);
    expect(typeof body.created).toBe("number");
    const completion = body as { choices: Array<{ message: { content: string } }>; usage: Record<string, number> };
    const content = completion.choices[0]?.message.content ?? "";
    expect(content.startsWith("[mock] ")).toBe(true);
    // "hello there" = 11 chars → 3 tokens + 4 per message.
    expect(completion.usage.prompt_tokens).toBe(7);
    expect(completion.usage.completion_tokens).toBe(Math.ceil(content.length / 4));
    expect(completion.usage.total_tokens).toBe(7 + Math.ceil(content.length / 4));
  });

  it("is deterministic: same request → same text, different prompt → different text", async () => {
    const texts: string[] = [];
    for (const prompt of ["alpha", "alpha", "beta"]) {
      const c = await client.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: prompt }] });
      texts.push(c.choices[0]?.message.content ?? "");
    }
    expect(texts[0]).toBe(texts[1]);
    expect(texts[0]).not.toBe(texts[2]);
  });

  it.each([
    ["max_tokens", 5],
    ["max_completion_tokens", 3],
  ])("cuts output at %s=%i with finish_reason length", async (param, max) => {
    const c = await client.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "long please" }], [param]: max });
    expect(c.choices[0]?.finish_reason).toBe("length");
    expect(c.usage?.completion_tokens).toBe(max);
    expect(c.choices[0]?.message.content).toHaveLength(max * 4);
  });

  it("honours x-mock-output-tokens", async () => {
    const res = await chat(mock, { headers: { "x-mock-output-tokens": "300" } });
    const body = (await res.json()) as { usage: { completion_tokens: number }; choices: Array<{ message: { content: string } }> };
    expect(body.usage.completion_tokens).toBe(300);
    expect(body.choices[0]?.message.content.startsWith("[mock]")).toBe(true);
  });

  it("counts prompt tokens over all messages, content parts and tools", async () => {
    const c = await client.chat.completions.create({
      model: "mock-1",
      messages: [
        { role: "system", content: "12345678" }, // 2 + 4
        {
          role: "user",
          content: [
            { type: "text", text: "abcd" },
            { type: "text", text: "efgh" },
          ],
        }, // 2 + 4
      ],
    });
    expect(c.usage?.prompt_tokens).toBe(12);
  });

  it("counts the requests that carry a CF-Worker header (those through miniflare's outbound interceptor)", async () => {
    const before = mock.stats().cf_worker_requests;
    await (await chat(mock, { headers: { "cf-worker": "edgeswarm-agent.example.com" } })).text();
    await (await chat(mock)).text();
    await (await chat(mock, { headers: { "CF-Worker": "example.com" } })).text();
    expect(mock.stats().cf_worker_requests - before).toBe(2);
  });
});

describe("streaming", () => {
  it("sends the OpenAI chunk sequence; the SDK reads content and usage equal to /stats", async () => {
    const stream = await client.chat.completions.create({
      model: "kimi-k2.5",
      messages: [{ role: "user", content: "stream me something" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = "";
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe("chat.completion.chunk");
      expect(chunk.id).toMatch(/^chatcmpl-mock-/);
      content += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(content.startsWith("[mock] ")).toBe(true);
    expect(finish).toBe("stop");
    expect(usage?.completion_tokens).toBe(Math.ceil(content.length / 4));

    // Same text as the non-streaming answer.
    const plain = await client.chat.completions.create({ model: "kimi-k2.5", messages: [{ role: "user", content: "stream me something" }] });
    expect(plain.choices[0]?.message.content).toBe(content);

    const s = mock.stats();
    expect(s.prompt_tokens).toBe(2 * (usage?.prompt_tokens ?? NaN));
    expect(s.completion_tokens).toBe(2 * (usage?.completion_tokens ?? NaN));
    expect(s.total_tokens).toBe(2 * (usage?.total_tokens ?? NaN));
    expect(s.by_model["kimi-k2.5"]).toEqual({
      calls: 2,
      usage_reports: 2,
      prompt_tokens: s.prompt_tokens,
      cached_tokens: 0,
      completion_tokens: s.completion_tokens,
      reasoning_tokens: 0,
      total_tokens: s.total_tokens,
      raw: {
        prompt_tokens: s.prompt_tokens,
        completion_tokens: s.completion_tokens,
        total_tokens: s.total_tokens,
        "prompt_tokens_details.cached_tokens": 0,
        "prompt_tokens_details.audio_tokens": 0,
        "completion_tokens_details.reasoning_tokens": 0,
        "completion_tokens_details.audio_tokens": 0,
        "completion_tokens_details.accepted_prediction_tokens": 0,
        "completion_tokens_details.rejected_prediction_tokens": 0,
      },
    });
    expect(s.by_key[keyIdOf(KEY)]?.calls).toBe(2);
    expect(JSON.stringify(s)).not.toContain(KEY);
    expect(s).toMatchObject({ calls: 2, completed: 2, in_flight: 0, by_status: { "200": 2 } });
  });

  it("wire format: role chunk first, finish chunk, usage chunk with choices [] only when asked, then [DONE]", async () => {
    for (const includeUsage of [true, false]) {
      const res = await chat(mock, { body: userBody("wire", { stream: true, stream_options: { include_usage: includeUsage } }) });
      expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
      expect(res.headers.get("x-mock-model")).toBe("true");
      const data = sseData(await res.text());
      expect(data.at(-1)).toBe("[DONE]");
      const chunks = data
        .slice(0, -1)
        .map((d) => JSON.parse(d) as { choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>; usage?: unknown });
      expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
      const usageChunks = chunks.filter((c) => c.choices.length === 0);
      if (includeUsage) {
        expect(usageChunks).toHaveLength(1);
        expect(chunks.at(-1)?.choices).toEqual([]);
        expect(chunks.at(-1)?.usage).toMatchObject({ prompt_tokens: 5 });
        expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop");
      } else {
        expect(usageChunks).toHaveLength(0);
        expect(chunks.every((c) => c.usage === undefined)).toBe(true);
        expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe("stop");
      }
    }
    // Tokens count only usage actually sent: one stream reported usage, the other did not.
    const s = mock.stats();
    expect(s.prompt_tokens).toBe(5);
    expect(s.completed).toBe(2);
  });

  it("stream cut at max_tokens ends with finish_reason length", async () => {
    const stream = await client.chat.completions.create({
      model: "mock-1",
      messages: [{ role: "user", content: "cut" }],
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = "";
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe("length");
    expect(content).toHaveLength(16);
    expect(mock.stats().completion_tokens).toBe(4);
  });

  it("sends headers before the latency wait, and a client abort during the wait cleans up", async () => {
    const ac = new AbortController();
    const started = Date.now();
    const res = await chat(mock, {
      body: userBody("slow", { stream: true }),
      headers: { "x-mock-latency-ms": "60000" },
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(30_000); // far below the 60 s latency
    expect(mock.stats().in_flight).toBe(1);
    ac.abort();
    await eventually(() => mock.stats().in_flight === 0);
    expect(mock.stats()).toMatchObject({ aborted: 1, completed: 0, completion_tokens: 0 });
  });
});

describe("JSON modes and tools", () => {
  it("json_object → a JSON object saying it is a mock", async () => {
    const c = await client.chat.completions.create({
      model: "mock-1",
      messages: [{ role: "user", content: "give json" }],
      response_format: { type: "json_object" },
    });
    const parsed = JSON.parse(c.choices[0]?.message.content ?? "") as Record<string, unknown>;
    expect(parsed).toMatchObject({ mock: true });
    expect(typeof parsed.prompt_hash).toBe("string");
    expect(String(parsed.summary).startsWith("[mock]")).toBe(true);
  });

  const zodCases: Array<[string, z.ZodType]> = [
    ["flat object", z.object({ title: z.string(), score: z.number(), count: z.int(), ok: z.boolean() })],
    ["enum + nested + array", z.object({ kind: z.enum(["a", "b"]), items: z.array(z.object({ id: z.int().min(3), tags: z.array(z.string()) })) })],
    ["nullable + bounds", z.object({ note: z.string().nullable(), ratio: z.number().min(0.5).max(0.9), name: z.string().min(40).max(50) })],
    ["union + literal + formats", z.object({ v: z.union([z.string(), z.number()]), lit: z.literal("x"), when: z.iso.datetime(), mail: z.email() })],
    ["record", z.object({ counts: z.record(z.string(), z.number()) })],
  ];
  it.each(zodCases)("json_schema (%s) → a value the schema accepts", async (_name, schema) => {
    const jsonSchema = z.toJSONSchema(schema, { target: "draft-2020-12" });
    const res = await chat(mock, {
      body: userBody("schema please", { response_format: { type: "json_schema", json_schema: { name: "out", strict: true, schema: jsonSchema } } }),
    });
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    const value: unknown = JSON.parse(body.choices[0]?.message.content ?? "");
    expect(schema.safeParse(value).error).toBeUndefined();
  });

  it("json_schema with $defs/$ref, allOf and additionalProperties", async () => {
    const schema: Parameters<typeof z.fromJSONSchema>[0] = {
      type: "object",
      $defs: {
        point: {
          type: "object",
          properties: { x: { type: "integer", exclusiveMinimum: 2 }, y: { type: "number", multipleOf: 0.5, minimum: 1.2 } },
          required: ["x", "y"],
          additionalProperties: false,
        },
      },
      properties: {
        a: { $ref: "#/$defs/point" },
        b: { allOf: [{ $ref: "#/$defs/point" }] },
        c: { type: ["null", "string"] },
        d: { type: "array", items: { const: 7 }, minItems: 2 },
      },
      required: ["a", "b", "c", "d"],
      additionalProperties: false,
    };
    const res = await chat(mock, { body: userBody("refs", { response_format: { type: "json_schema", json_schema: { name: "r", schema } } }) });
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    const value: unknown = JSON.parse(body.choices[0]?.message.content ?? "");
    expect(z.fromJSONSchema(schema).safeParse(value).error).toBeUndefined();
    expect(value).not.toHaveProperty("mock");
  });

  it("the SDK's zodResponseFormat + parse() works", async () => {
    const Answer = z.object({ answer: z.string(), confidence: z.number().min(0).max(1) });
    const c = await client.chat.completions.parse({
      model: "mock-1",
      messages: [{ role: "user", content: "structured" }],
      response_format: zodResponseFormat(Answer, "answer"),
    });
    expect(Answer.parse(c.choices[0]?.message.parsed)).toBeTruthy();
  });

  it("tool_choice required → one tool call whose arguments fit the parameters (stream and not)", async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: "function",
        function: {
          name: "search",
          parameters: { type: "object", properties: { q: { type: "string" }, k: { type: "integer", minimum: 1 } }, required: ["q", "k"] },
        },
      },
    ];
    const c = await client.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "use tool" }], tools, tool_choice: "required" });
    const call = c.choices[0]?.message.tool_calls?.[0];
    expect(c.choices[0]?.finish_reason).toBe("tool_calls");
    expect(call?.type === "function" ? call.function.name : undefined).toBe("search");
    const args = JSON.parse(call?.type === "function" ? call.function.arguments : "") as { q: string; k: number };
    expect(typeof args.q).toBe("string");
    expect(args.k).toBeGreaterThanOrEqual(1);

    const stream = await client.chat.completions.create({
      model: "mock-1",
      messages: [{ role: "user", content: "use tool" }],
      tools,
      tool_choice: { type: "function", function: { name: "search" } },
      stream: true,
    });
    let streamedArgs = "";
    for await (const chunk of stream) streamedArgs += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? "";
    expect(JSON.parse(streamedArgs)).toEqual(args);
  });
});

describe("latency and concurrency", () => {
  it.each([
    ["scenario latency", { latency: 150 }, {}, 150],
    ["uniform distribution", { latency: { dist: "uniform" as const, min: 150, max: 200 } }, {}, 150],
    ["per-model override", { latency: 0, latency_by_model: { "mock-1": 150 } }, {}, 150],
    ["x-mock-latency-ms header", { latency: 0 }, { "x-mock-latency-ms": "200" }, 200],
  ])("%s is applied (lower bound only)", async (_name, scenario, headers, min) => {
    mock.setScenario(scenario);
    const t0 = performance.now();
    const res = await chat(mock, { headers });
    await res.json();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(min - 15);
  });

  it("max_in_flight reflects parallel calls and returns to 0", async () => {
    const n = 20;
    const all = await Promise.all(
      Array.from({ length: n }, (_, i) => chat(mock, { body: userBody(`p${i}`), headers: { "x-mock-latency-ms": "1500" } }).then((r) => r.json())),
    );
    expect(all).toHaveLength(n);
    const s = mock.stats();
    expect(s.max_in_flight).toBeGreaterThanOrEqual(5);
    expect(s.max_in_flight).toBeLessThanOrEqual(n);
    expect(s).toMatchObject({ in_flight: 0, calls: n, completed: n });
  });
});

describe("time to first byte (ttfb)", () => {
  /** Times until the headers arrive and until the body has been read, from the request. */
  async function timed(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<{ headersMs: number; endMs: number; text: string }> {
    const t0 = performance.now();
    const res = await chat(mock, { body, headers });
    const headersMs = performance.now() - t0;
    expect(res.status).toBe(200);
    const text = await res.text();
    return { headersMs, endMs: performance.now() - t0, text };
  }
  const stream = userBody("ttfb", { stream: true, stream_options: { include_usage: true } });
  const plain = userBody("ttfb");
  // Lower bounds only, except the one gap that must stay short (timers fire late, never early).
  // The body's timer starts when the headers go out, so end − headers ≥ latency − ttfb holds on a
  // slow machine too.
  const cases: Array<
    [string, Record<string, unknown>, Record<string, string>, Record<string, unknown>, { headers: number; gap?: number; maxGap?: number; end?: number }]
  > = [
    ["stream, default ttfb 0: headers at once, body after the latency", { latency: 600 }, {}, stream, { headers: 0, gap: 600 }],
    ["stream, ttfb below the latency", { latency: 900, ttfb_ms: 300 }, {}, stream, { headers: 300, gap: 600 }],
    ["stream, latency below the ttfb: ends right after the headers", { latency: 50, ttfb_ms: 400 }, {}, stream, { headers: 400, maxGap: 300 }],
    ["stream, x-mock-ttfb-ms overrides the scenario", { latency: 600, ttfb_ms: 0 }, { "x-mock-ttfb-ms": "300" }, stream, { headers: 300, gap: 300 }],
    ["non-stream, latency above the ttfb: sent at the latency", { latency: 400, ttfb_ms: 100 }, {}, plain, { headers: 400 }],
    ["non-stream, latency below the ttfb: sent at the ttfb", { latency: 50, ttfb_ms: 400 }, {}, plain, { headers: 400 }],
  ];
  it.each(cases)("%s", async (_name, scenario, headers, body, want) => {
    mock.setScenario(scenario);
    const { headersMs, endMs, text } = await timed(body, headers);
    const slack = 15;
    expect(headersMs).toBeGreaterThanOrEqual(want.headers - slack);
    if (want.gap !== undefined) expect(endMs - headersMs).toBeGreaterThanOrEqual(want.gap - slack);
    if (want.maxGap !== undefined) expect(endMs - headersMs).toBeLessThan(want.maxGap);
    if (body.stream === true) expect(sseData(text).at(-1)).toBe("[DONE]");
    else expect(JSON.parse(text)).toMatchObject({ object: "chat.completion" });
    expect(mock.stats()).toMatchObject({ calls: 1, completed: 1, in_flight: 0, waiting_for_headers: 0, max_waiting_for_headers: 1 });
  });

  it("ttfbMs is an alias of the scenario's ttfb_ms", async () => {
    const other = await startMockModel({ ttfbMs: 250 });
    try {
      expect(other.getScenario()).toMatchObject({ ttfb_ms: 250 });
    } finally {
      await other.close();
    }
  });

  it("max_waiting_for_headers counts requests whose headers are not out yet; max_in_flight all open ones", async () => {
    mock.setScenario({ latency: 1500, ttfb_ms: 700 });
    const streams = Array.from({ length: 8 }, (_, i) => chat(mock, { body: userBody(`s${i}`, { stream: true }) }));
    const plains = Array.from({ length: 2 }, (_, i) => chat(mock, { body: userBody(`p${i}`) }));
    await eventually(() => mock.stats().waiting_for_headers === 10);
    const opened = await Promise.all(streams);
    // Every stream has its headers; the non-streamed answers wait for theirs until their latency ends.
    expect(mock.stats()).toMatchObject({ in_flight: 10, waiting_for_headers: 2 });
    await Promise.all([...opened, ...(await Promise.all(plains))].map((r) => r.text()));
    expect(mock.stats()).toMatchObject({ calls: 10, completed: 10, in_flight: 0, max_in_flight: 10, waiting_for_headers: 0, max_waiting_for_headers: 10 });
    mock.resetStats();
    expect(mock.stats()).toMatchObject({ max_in_flight: 0, max_waiting_for_headers: 0 });
  });

  it("keeps the spans of up to keepRequestSpans requests since the last reset, none by default", async () => {
    expect(mock.requestSpans()).toEqual([]);
    const other = await startMockModel({ keepRequestSpans: 2, latency: 40 });
    try {
      const before = Date.now();
      for (const i of [1, 2, 3]) await (await chat(other, { body: userBody(`span ${i}`) })).text();
      const spans = other.requestSpans();
      expect(spans).toHaveLength(2);
      for (const span of spans) {
        expect(span.start).toBeGreaterThanOrEqual(before);
        expect(span.end - span.start).toBeGreaterThanOrEqual(30);
      }
      expect(spans[1]?.start).toBeGreaterThanOrEqual(spans[0]?.end ?? Infinity);
      other.resetStats();
      expect(other.requestSpans()).toEqual([]);
      await (await chat(other, { body: userBody("after the reset") })).text();
      expect(other.requestSpans()).toHaveLength(1);
    } finally {
      await other.close();
    }
    await expect(startMockModel({ keepRequestSpans: -1 })).rejects.toThrow("keepRequestSpans must be an integer >= 0");
  });

  it("a client that leaves during the ttfb stops waiting for headers", async () => {
    const ac = new AbortController();
    const p = chat(mock, { body: userBody("gone", { stream: true }), headers: { "x-mock-ttfb-ms": "60000" }, signal: ac.signal });
    await eventually(() => mock.stats().waiting_for_headers === 1);
    ac.abort();
    await expect(p).rejects.toThrow();
    await eventually(() => mock.stats().in_flight === 0);
    expect(mock.stats()).toMatchObject({ waiting_for_headers: 0, aborted: 1, by_status: {} });
  });
});

describe("other endpoints", () => {
  it("GET /v1/models lists the default models (auth required)", async () => {
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toEqual(DEFAULT_MODELS);
    expect((await get("/v1/models")).status).toBe(401);
  });

  it("GET /v1/models uses the configured list", async () => {
    const other = await startMockModel({ models: ["a", "b"] });
    try {
      const res = await fetch(`${other.url}/v1/models`, { headers: { authorization: "Bearer x" } });
      expect(await res.json()).toMatchObject({ object: "list", data: [{ id: "a", object: "model" }, { id: "b" }] });
    } finally {
      await other.close();
    }
  });

  it("GET /healthz, GET /stats and POST /stats/reset", async () => {
    expect(await (await get("/healthz")).json()).toEqual({ ok: true, mock: true });
    await (await chat(mock)).json();
    const s = (await (await get("/stats")).json()) as Record<string, unknown>;
    expect(s).toMatchObject({ mock: true, calls: 1, completed: 1, by_status: { "200": 1 }, faults_injected: {} });
    expect(typeof s.started_at).toBe("string");
    const reset = (await (await fetch(`${mock.url}/stats/reset`, { method: "POST" })).json()) as Record<string, unknown>;
    expect(reset).toMatchObject({ calls: 0, prompt_tokens: 0, by_status: {}, by_model: {} });
  });

  it("POST/GET /admin/scenario replaces and returns the scenario; invalid input is 400", async () => {
    const post = (body: unknown): Promise<Response> => fetch(`${mock.url}/admin/scenario`, { method: "POST", headers: AUTH, body: JSON.stringify(body) });
    const ok = await post({ latency: "uniform:1:2", rates: { "500": 0.1 }, script: ["429", "ok"] });
    expect(ok.status).toBe(200);
    expect(await (await get("/admin/scenario")).json()).toEqual({
      seed: 1,
      latency: { dist: "uniform", min: 1, max: 2 },
      rates: { "500": 0.1 },
      script: ["429", "ok"],
    });
    await (await chat(mock)).text();
    expect(((await (await get("/admin/scenario")).json()) as { script: string[] }).script).toEqual(["ok"]);
    for (const bad of [{ rates: { nope: 0.1 } }, { latency: "weird:1" }, { unknown: 1 }, [1]]) expect((await post(bad)).status).toBe(400);
    expect((await post({})).status).toBe(200);
    expect(await (await get("/admin/scenario")).json()).toEqual({ seed: 1 });
  });

  it("every response carries x-mock-model, including errors", async () => {
    for (const res of [await get("/nope"), await get("/stats"), await chat(mock, { headers: { authorization: "" } })]) {
      expect(res.headers.get("x-mock-model")).toBe("true");
      await res.arrayBuffer();
    }
  });
});

describe("request errors", () => {
  const cases: Array<[string, unknown, Record<string, string>, number, string | null, string | null]> = [
    ["missing messages", { model: "m" }, {}, 400, "messages", "missing_required_parameter"],
    ["messages not an array", { model: "m", messages: "hi" }, {}, 400, "messages", "invalid_type"],
    ["empty messages", { model: "m", messages: [] }, {}, 400, "messages", "empty_array"],
    ["bad role", { model: "m", messages: [{ role: "robot", content: "x" }] }, {}, 400, "messages[0].role", "invalid_value"],
    ["missing model", { messages: [{ role: "user", content: "x" }] }, {}, 400, "model", "missing_required_parameter"],
    ["model not a string", { model: 3, messages: [{ role: "user", content: "x" }] }, {}, 400, "model", "invalid_type"],
    ["bad max_tokens", { model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 0 }, {}, 400, "max_tokens", "invalid_value"],
    [
      "bad response_format",
      { model: "m", messages: [{ role: "user", content: "x" }], response_format: { type: "xml" } },
      {},
      400,
      "response_format.type",
      "invalid_value",
    ],
    ["no auth", userBody("x"), { authorization: "" }, 401, null, "missing_api_key"],
    ["bad auth scheme", userBody("x"), { authorization: "Basic abc" }, 401, null, "missing_api_key"],
    ["unknown x-mock-fault", userBody("x"), { "x-mock-fault": "meteor" }, 400, null, "invalid_mock_header"],
    ["bad x-mock-latency-ms", userBody("x"), { "x-mock-latency-ms": "soon" }, 400, null, "invalid_mock_header"],
    ["bad x-mock-ttfb-ms", userBody("x"), { "x-mock-ttfb-ms": "-5" }, 400, null, "invalid_mock_header"],
  ];
  it.each(cases)("%s", async (_name, body, headers, status, param, code) => {
    const res = await chat(mock, { body: body as Record<string, unknown>, headers });
    expect(res.status).toBe(status);
    const err = (await res.json()) as { error: Record<string, unknown> };
    expect(err.error).toMatchObject({ type: "invalid_request_error", param, code });
    expect(typeof err.error.message).toBe("string");
  });

  it("bad JSON → 400, unknown path → 404 JSON, wrong method → 405, huge body → 413", async () => {
    const badJson = await fetch(`${mock.url}/v1/chat/completions`, { method: "POST", headers: AUTH, body: "{nope" });
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
    const notFound = await get("/v1/nothing");
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toMatchObject({ error: { message: "Invalid URL (GET /v1/nothing)" } });
    const wrongMethod = await get("/v1/chat/completions");
    expect(wrongMethod.status).toBe(405);
    await wrongMethod.arrayBuffer();
    const huge = await chat(mock, { body: userBody("x".repeat(5 * 1024 * 1024)) });
    expect(huge.status).toBe(413);
    await huge.arrayBuffer();
    await eventually(() => mock.stats().in_flight === 0);
    expect(mock.stats().by_status).toMatchObject({ "400": 1, "413": 1 });
  });
});

describe("client aborts", () => {
  it("an abort during a non-stream latency wait does not crash and decrements in_flight", async () => {
    const ac = new AbortController();
    const p = chat(mock, { headers: { "x-mock-latency-ms": "60000" }, signal: ac.signal });
    await eventually(() => mock.stats().in_flight === 1);
    ac.abort();
    await expect(p).rejects.toThrow();
    await eventually(() => mock.stats().in_flight === 0);
    expect(mock.stats().aborted).toBe(1);
    const again = await chat(mock);
    expect(again.status).toBe(200);
    expect(await readAll(again)).toMatchObject({ errored: false });
  });
});
