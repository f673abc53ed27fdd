// The model adapter against an injected fetch: what it sends, what it returns for a good stream,
// and the error class of every upstream fault shape (the one place failures are classified).
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import type { ErrorClass } from "../core/error-class.ts";
import { createModelClient } from "./model-client.ts";
import type { ModelCallResult, ModelRequest } from "./model-client.ts";

const API_KEY = "secret-test-key-5f2b9c";
const BASE_URL = "https://upstream.example/v1";

const request: ModelRequest = {
  model: "mock-1",
  messages: [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Say hi." },
  ],
  tools: null,
  parallelToolCalls: null,
  maxOutputTokens: 64,
  timeoutMs: 5_000,
  responseFormat: null,
};

type Fetch = typeof fetch;

function chunk(delta: Record<string, unknown> | null, finish: string | null = null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1,
    model: "mock-1",
    choices: delta === null ? [] : [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  };
}

const USAGE = { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15, prompt_tokens_details: { cached_tokens: 4 } };

/** SSE text from events (objects are JSON-encoded, strings are sent as the data verbatim). */
function sse(events: readonly unknown[], done = true): string {
  const lines = events.map((e) => `data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`);
  return lines.join("") + (done ? "data: [DONE]\n\n" : "");
}

function streamResponse(body: string | ReadableStream<Uint8Array>): Response {
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(typeof body === "string" ? body : JSON.stringify(body), {
    status,
    headers: { "content-type": typeof body === "string" ? "text/html" : "application/json", ...headers },
  });
}

const GOOD_STREAM = sse([
  chunk({ role: "assistant", content: "" }),
  chunk({ content: "Hel" }),
  chunk({ content: "lo" }),
  chunk({}, "stop"),
  chunk(null, null, { usage: USAGE }),
]);

interface Captured {
  url: string;
  authorization: string | null;
  body: Record<string, unknown>;
}

function fakeFetch(respond: (init: RequestInit | undefined) => Promise<Response> | Response, captured: Captured[] = []): Fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const headers = new Headers(init?.headers);
    const text = typeof init?.body === "string" ? init.body : "{}";
    const parsed: unknown = JSON.parse(text);
    captured.push({
      url,
      authorization: headers.get("authorization"),
      body: typeof parsed === "object" && parsed !== null ? Object.fromEntries(Object.entries(parsed)) : {},
    });
    return respond(init);
  };
}

async function call(respond: Parameters<typeof fakeFetch>[0], overrides: Partial<ModelRequest> = {}): Promise<ModelCallResult> {
  const client = createModelClient({ baseURL: BASE_URL, apiKey: API_KEY, fetch: fakeFetch(respond) });
  return client.complete({ ...request, ...overrides });
}

describe("model client: the request it sends", () => {
  it("streams with usage, passes model, messages, max_tokens and the key, and no response_format for null", async () => {
    const captured: Captured[] = [];
    const client = createModelClient({ baseURL: BASE_URL, apiKey: API_KEY, fetch: fakeFetch(() => streamResponse(GOOD_STREAM), captured) });
    await client.complete(request);
    expect(captured).toHaveLength(1);
    const [sent] = captured;
    expect(sent?.url).toBe(`${BASE_URL}/chat/completions`);
    expect(sent?.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sent?.body).toMatchObject({
      model: "mock-1",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Say hi." },
      ],
      max_tokens: 64,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(sent?.body).not.toHaveProperty("response_format");
  });

  it("omits the system message when there is none, and passes a json response_format through", async () => {
    const captured: Captured[] = [];
    const client = createModelClient({ baseURL: BASE_URL, apiKey: API_KEY, fetch: fakeFetch(() => streamResponse(GOOD_STREAM), captured) });
    const schema = { type: "json_schema", json_schema: { name: "verdict", schema: { type: "object" }, strict: true } } as const;
    await client.complete({ ...request, messages: [{ role: "user", content: "Say hi." }], responseFormat: schema });
    await client.complete({ ...request, responseFormat: { type: "text" } });
    expect(captured[0]?.body.messages).toEqual([{ role: "user", content: "Say hi." }]);
    expect(captured[0]?.body.response_format).toEqual(schema);
    expect(captured[1]?.body).not.toHaveProperty("response_format");
  });

  it("sends a batch line's body as it is, with only the model, streaming and a missing output limit set", async () => {
    const captured: Captured[] = [];
    const client = createModelClient({ baseURL: BASE_URL, apiKey: API_KEY, fetch: fakeFetch(() => streamResponse(GOOD_STREAM), captured) });
    const line = {
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
      temperature: 0.2,
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
      response_format: { type: "json_object" },
      max_completion_tokens: 7,
    };
    await client.complete({ ...request, passthrough: line });
    await client.complete({ ...request, passthrough: { messages: line.messages } });
    expect(captured[0]?.body).toEqual({ ...line, model: "mock-1", stream: true, stream_options: { include_usage: true } });
    expect(captured[1]?.body).toEqual({ messages: line.messages, model: "mock-1", max_tokens: 64, stream: true, stream_options: { include_usage: true } });
  });

  it("makes exactly one upstream request per call, even for a retryable failure", async () => {
    const captured: Captured[] = [];
    const client = createModelClient({
      baseURL: BASE_URL,
      apiKey: API_KEY,
      fetch: fakeFetch(() => jsonResponse(503, { error: { message: "overloaded" } }), captured),
    });
    const result = await client.complete(request);
    expect(result.ok).toBe(false);
    expect(captured).toHaveLength(1);
  });
});

/** Everything a request carries but its length, as the upstream would see it. */
interface WireRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

function recordingFetch(requests: WireRequest[]): Fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const headers = Object.fromEntries([...request.headers.entries()].filter(([name]) => name !== "content-length"));
    requests.push({ url: request.url, method: request.method, headers, body: JSON.parse(await request.text()) });
    return streamResponse(GOOD_STREAM);
  };
}

describe("model client: the SDK's own request, replayed", () => {
  // The client sends the request the SDK builds once per timeout with each call's body: the upstream
  // must not be able to tell it from the SDK's own create().
  it("sends the URL, method, headers and body the SDK's create() sends, call after call", async () => {
    const ours: WireRequest[] = [];
    const sdks: WireRequest[] = [];
    const client = createModelClient({ baseURL: BASE_URL, apiKey: API_KEY, fetch: recordingFetch(ours) });
    const sdk = new OpenAI({
      apiKey: API_KEY,
      baseURL: BASE_URL,
      organization: null,
      project: null,
      maxRetries: 0,
      logLevel: "off",
      fetch: recordingFetch(sdks),
    });
    const second: ModelRequest = { ...request, messages: [{ role: "user", content: "Again." }], maxOutputTokens: 9 };
    for (const call of [request, second]) {
      await client.complete(call);
      const params = {
        model: call.model,
        messages: [...call.messages],
        max_tokens: call.maxOutputTokens,
        stream: true as const,
        stream_options: { include_usage: true },
      };
      await sdk.chat.completions.create(params, { timeout: call.timeoutMs }).asResponse();
    }
    expect(ours).toHaveLength(2);
    expect(ours).toEqual(sdks);
    expect(ours[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(ours[1]?.body).toMatchObject({ messages: [{ role: "user", content: "Again." }], max_tokens: 9 });
  });

  it("builds the request again for another timeout, whose header says so", async () => {
    const ours: WireRequest[] = [];
    const client = createModelClient({ baseURL: BASE_URL, apiKey: API_KEY, fetch: recordingFetch(ours) });
    await client.complete({ ...request, timeoutMs: 5_000 });
    await client.complete({ ...request, timeoutMs: 120_000 });
    await client.complete({ ...request, timeoutMs: 5_000 });
    expect(ours.map((r) => r.headers["x-stainless-timeout"])).toEqual(["5", "120", "5"]);
  });
});

describe("model client: successful streams", () => {
  it("accumulates the content, keeps the finish reason and normalizes the usage of the last chunk", async () => {
    const result = await call(() => streamResponse(GOOD_STREAM));
    expect(result).toMatchObject({
      ok: true,
      text: "Hello",
      finishReason: "stop",
      usage: { prompt_tokens: 12, cached_tokens: 4, completion_tokens: 3, reasoning_tokens: 0, total_tokens: 15 },
    });
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    expect(result.startedAt).toBeGreaterThan(0);
  });

  it("reads Kimi's usage inside choices[0]", async () => {
    const body = sse([
      chunk({ content: "ok" }),
      {
        ...chunk({}, "stop"),
        choices: [{ index: 0, delta: {}, finish_reason: "stop", usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9, cached_tokens: 3 } }],
      },
    ]);
    const result = await call(() => streamResponse(body));
    expect(result).toMatchObject({ ok: true, text: "ok", usage: { prompt_tokens: 7, cached_tokens: 3, completion_tokens: 2, total_tokens: 9 } });
  });

  it("returns a success with usage null (recorded as missing, not zero) when the upstream sends no usage", async () => {
    const body = sse([chunk({ content: "fine" }), chunk({}, "length")]);
    const result = await call(() => streamResponse(body));
    expect(result).toMatchObject({ ok: true, text: "fine", finishReason: "length", usage: null });
  });

  it("reads a whole JSON completion from an upstream that ignores stream: true, with its usage", async () => {
    const body = {
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: "not streamed" }, finish_reason: "stop" }],
      usage: USAGE,
    };
    const result = await call(() => new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json; charset=utf-8" } }));
    expect(result).toMatchObject({ ok: true, text: "not streamed", finishReason: "stop", usage: { prompt_tokens: 12, cached_tokens: 4, total_tokens: 15 } });
  });

  it("keeps a finished answer when the connection breaks after the finish_reason, with usage null", async () => {
    const body = brokenBody(sse([chunk({ content: "whole" }), chunk({}, "stop")], false));
    const result = await call(() => streamResponse(body));
    expect(result).toMatchObject({ ok: true, text: "whole", finishReason: "stop", usage: null });
  });

  it("keeps a finished answer when the deadline passes while waiting for the usage chunk", async () => {
    const body = hangingBody(sse([chunk({ content: "done" }), chunk({}, "stop")], false));
    const result = await call(() => streamResponse(body), { timeoutMs: 50 });
    expect(result).toMatchObject({ ok: true, text: "done", finishReason: "stop", usage: null });
  });
});

interface FaultCase {
  name: string;
  respond: Parameters<typeof fakeFetch>[0];
  timeoutMs?: number;
  class: ErrorClass;
  retryable: boolean;
  retryAfterMs?: number | null;
  messageIncludes?: string;
}

/** A body that sends `first` and then never ends (until the request is aborted). */
function hangingBody(first: string): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(first));
    },
  });
}

/** A body that sends `first` and then breaks like a reset connection. */
function brokenBody(first: string): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new TextEncoder().encode(first));
        return;
      }
      controller.error(new TypeError("Network connection lost."));
    },
  });
}

const neverAnswers = (init: RequestInit | undefined): Promise<Response> =>
  new Promise((_, reject) => {
    init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
  });

const FAULTS: FaultCase[] = [
  {
    name: "429 with retry-after-ms",
    respond: () =>
      jsonResponse(
        429,
        { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } },
        { "retry-after-ms": "1500", "retry-after": "2" },
      ),
    class: "rate_limited",
    retryable: true,
    retryAfterMs: 1500,
  },
  {
    name: "429 insufficient_quota",
    respond: () => jsonResponse(429, { error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" } }),
    class: "quota_exceeded",
    retryable: false,
  },
  {
    name: "429 with retry-after in seconds only",
    respond: () => jsonResponse(429, { error: { message: "Rate limit reached" } }, { "retry-after": "2" }),
    class: "rate_limited",
    retryable: true,
    retryAfterMs: 2_000,
  },
  {
    name: "429 without retry-after",
    respond: () => jsonResponse(429, { error: { message: "slow down" } }),
    class: "rate_limited",
    retryable: true,
    retryAfterMs: null,
  },
  { name: "408", respond: () => jsonResponse(408, { error: { message: "request timeout" } }), class: "upstream_error", retryable: true },
  { name: "409", respond: () => jsonResponse(409, { error: { message: "conflict" } }), class: "upstream_error", retryable: true },
  { name: "500", respond: () => jsonResponse(500, { error: { message: "server error", type: "server_error" } }), class: "upstream_error", retryable: true },
  { name: "500 whose JSON body does not parse", respond: () => jsonResponse(500, '{"error": {"mess'), class: "upstream_error", retryable: true },
  { name: "504", respond: () => jsonResponse(504, { error: { message: "gateway timeout" } }), class: "upstream_error", retryable: true },
  { name: "422", respond: () => jsonResponse(422, { error: { message: "Unprocessable Entity" } }), class: "bad_request", retryable: false },
  {
    name: "502 HTML page",
    respond: () => jsonResponse(502, "<html><head><title>502 Bad Gateway</title></head></html>"),
    class: "upstream_error",
    retryable: true,
    messageIncludes: "Bad Gateway",
  },
  {
    name: "503",
    respond: () => jsonResponse(503, { error: { message: "overloaded" } }),
    class: "upstream_error",
    retryable: true,
    messageIncludes: "overloaded",
  },
  {
    name: "401",
    respond: () => jsonResponse(401, { error: { message: "Incorrect API key provided", code: "invalid_api_key" } }),
    class: "auth",
    retryable: false,
  },
  { name: "403", respond: () => jsonResponse(403, { error: { message: "forbidden" } }), class: "auth", retryable: false },
  {
    name: "404 model",
    respond: () => jsonResponse(404, { error: { message: "The model does not exist", code: "model_not_found" } }),
    class: "not_found",
    retryable: false,
  },
  {
    name: "400",
    respond: () => jsonResponse(400, { error: { message: "Invalid request", type: "invalid_request_error" } }),
    class: "bad_request",
    retryable: false,
  },
  {
    name: "400 context length",
    respond: () => jsonResponse(400, { error: { message: "This model's maximum context length is 128000 tokens", code: "context_length_exceeded" } }),
    class: "context_length",
    retryable: false,
  },
  {
    name: "400 context window message without a code",
    respond: () => jsonResponse(400, { error: { message: "input exceeds the context window of this model" } }),
    class: "context_length",
    retryable: false,
  },
  {
    name: "200 JSON body that is not valid JSON",
    respond: () => new Response('{"id": "chatcmpl-1", "choi', { status: 200, headers: { "content-type": "application/json" } }),
    class: "malformed_response",
    retryable: true,
  },
  {
    name: "200 JSON error object",
    respond: () =>
      new Response(JSON.stringify({ error: { message: "model overloaded, try later" } }), { status: 200, headers: { "content-type": "application/json" } }),
    class: "upstream_error",
    retryable: true,
    messageIncludes: "model overloaded",
  },
  {
    name: "200 JSON without a finished choice",
    respond: () => new Response(JSON.stringify({ id: "x", choices: [] }), { status: 200, headers: { "content-type": "application/json" } }),
    class: "malformed_response",
    retryable: true,
  },
  {
    name: "event stream that ends before any event",
    respond: () => streamResponse(""),
    class: "truncated_stream",
    retryable: true,
  },
  {
    name: "unparseable SSE data",
    respond: () => streamResponse(sse([chunk({ content: "Hel" }), '{"id":"chatcmpl-1","choices":[{"delta":{"cont'])),
    class: "malformed_response",
    retryable: true,
  },
  {
    name: "stream ends without a finish_reason",
    respond: () => streamResponse(sse([chunk({ content: "Hel" })], false)),
    class: "truncated_stream",
    retryable: true,
  },
  {
    name: "stream ends with [DONE] but no finish_reason",
    respond: () => streamResponse(sse([chunk({ content: "Hel" })], true)),
    class: "truncated_stream",
    retryable: true,
  },
  {
    name: "connection breaks mid-stream",
    respond: () => streamResponse(brokenBody(sse([chunk({ content: "Hel" })], false))),
    class: "truncated_stream",
    retryable: true,
  },
  {
    name: "error event inside a 200 stream",
    respond: () => streamResponse(sse([chunk({ content: "Hel" }), { error: { message: "upstream overloaded mid-stream", type: "server_error" } }])),
    class: "upstream_error",
    retryable: true,
    messageIncludes: "overloaded mid-stream",
  },
  {
    name: "fetch rejects (DNS, refused connection)",
    respond: () => Promise.reject(new TypeError("fetch failed")),
    class: "upstream_connection",
    retryable: true,
  },
  { name: "no response headers before the deadline", respond: neverAnswers, timeoutMs: 50, class: "upstream_timeout", retryable: true },
  {
    name: "headers, then a stream that hangs past the deadline",
    respond: () => streamResponse(hangingBody(sse([chunk({ content: "Hel" })], false))),
    timeoutMs: 50,
    class: "upstream_timeout",
    retryable: true,
  },
];

describe("model client: every failure is a classified value", () => {
  it.each(FAULTS)("$name → $class", async (fault) => {
    const result = await call(fault.respond, fault.timeoutMs === undefined ? {} : { timeoutMs: fault.timeoutMs });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.class).toBe(fault.class);
    expect(result.error.retryable).toBe(fault.retryable);
    if (fault.retryAfterMs !== undefined) expect(result.error.retryAfterMs).toBe(fault.retryAfterMs);
    if (fault.messageIncludes !== undefined) expect(result.error.message).toContain(fault.messageIncludes);
    expect(result.error.message.length).toBeGreaterThan(0);
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it("never puts the API key in an error message, even when the upstream echoes it", async () => {
    const echoes = [
      () => jsonResponse(401, { error: { message: `Incorrect API key provided: ${API_KEY}. Find your key at ...` } }),
      () => jsonResponse(500, `upstream said: key ${API_KEY} is broken`),
      () => streamResponse(sse([{ error: { message: `bad key ${API_KEY}` } }])),
      () => Promise.reject(new TypeError(`could not connect with ${API_KEY}`)),
    ];
    for (const respond of echoes) {
      const result = await call(respond);
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.error.message).not.toContain(API_KEY);
      expect(result.error.message).not.toContain(API_KEY.slice(0, 12));
    }
  });

  it("keeps the usage a failed stream reported before it broke", async () => {
    const body = sse([chunk({ content: "Hel" }, null, { usage: USAGE })], false);
    const result = await call(() => streamResponse(body));
    expect(result).toMatchObject({ ok: false, error: { class: "truncated_stream" }, usage: { total_tokens: 15 } });
  });
});
