// The model adapter: one streaming chat-completions call to an OpenAI-compatible upstream, and the
// one place where upstream failures are classified. It never throws and never leaks the API key.
import OpenAI from "openai";
import type { ChatCompletionCreateParamsStreaming, ChatCompletionTool } from "openai/resources/chat/completions";
import type { ChatMessage } from "../core/agent-conversation.ts";
import type { ClassifiedError } from "../core/error-class.ts";
import { accumulateToolCalls, type ToolCall } from "../core/tool-calls.ts";
import type { ResponseFormat } from "../core/spec-schema.ts";
import { classifyUpstreamError } from "../core/upstream-error.ts";
import type { UpstreamFailure } from "../core/upstream-error.ts";
import { extractStreamUsage, normalizeUsage } from "../core/usage.ts";
import { readChatStream, StreamErrorEvent } from "./chat-stream.ts";
import type { Usage } from "../core/usage.ts";
import { isRecord } from "../core/is-record.ts";

export interface ModelRequest {
  model: string;
  /** The conversation so far (system, user, assistant turns with tool calls, tool results). */
  messages: readonly ChatMessage[];
  /** Tools offered on this call; null = none. */
  tools: readonly ChatCompletionTool[] | null;
  /** Passed through when set (only with tools). */
  parallelToolCalls: boolean | null;
  maxOutputTokens: number;
  /** Wall-time limit of the whole call, headers and body. */
  timeoutMs: number;
  responseFormat: ResponseFormat | null;
  /**
   * A batch line's request body, passed through as it is (messages, tools, response_format,
   * temperature, max_tokens…): only `model` (routed) and streaming with usage are set here, and
   * `max_tokens` when the body sets no output limit. `messages`, `tools` and `responseFormat` above
   * are then not sent.
   */
  passthrough?: Record<string, unknown>;
  /**
   * The connection slot the caller took for this call (production allows an invocation 6
   * connections waiting for response headers): freed here the moment the headers arrive, or when
   * the call ends without them. Absent: no bound.
   */
  headerSlot?: HeaderSlot;
  /** Aborts the call (the other call of a hedge answered first): it ends as a failure at once. */
  signal?: AbortSignal;
}

/** One taken slot of a header gate; `release` is idempotent. */
export interface HeaderSlot {
  release(): void;
}

interface CallTiming {
  latencyMs: number;
  /** From the request to its response headers; null (or absent) when none arrived. */
  ttfbMs?: number | null;
  /** Epoch ms. */
  startedAt: number;
}

export type ModelCallResult =
  | ({ ok: true; text: string; finishReason: string | null; usage: Usage | null; toolCalls: ToolCall[] } & CallTiming)
  | ({ ok: false; error: ClassifiedError; usage: Usage | null } & CallTiming);

export interface ModelClient {
  complete(request: ModelRequest): Promise<ModelCallResult>;
}

export interface ModelClientOptions {
  baseURL: string;
  apiKey: string;
  fetch?: typeof fetch;
}

/** The SDK's own ceiling; every request passes its own, shorter timeout. */
const CLIENT_TIMEOUT_MS = 600_000;

/**
 * One SDK client per (baseURL, key): callers keep the returned client and reuse it.
 * Everything the SDK would otherwise read from `process.env` (OPENAI_*) is passed explicitly, and
 * `maxRetries: 0` because retries belong to the queue (a retry is a new attempt with its own
 * ledger row, decided by the SwarmRoom).
 */
export function createModelClient(options: ModelClientOptions): ModelClient {
  const sdk = new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    organization: null,
    project: null,
    timeout: CLIENT_TIMEOUT_MS,
    maxRetries: 0,
    // Failures come back as values and are logged by the caller, without the SDK's own noise.
    logLevel: "off",
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  const prepared = new Map<number, Promise<PreparedRequest>>();
  const client: ChatTransport = {
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    prepared(timeoutMs) {
      let request = prepared.get(timeoutMs);
      if (request === undefined) {
        request = prepareChatRequest(sdk, timeoutMs);
        prepared.set(timeoutMs, request);
        // A failed build is not kept: the next call builds again.
        request.catch(() => prepared.delete(timeoutMs));
      }
      return request;
    },
  };
  return { complete: (request) => completeOnce(client, options.apiKey, request) };
}

/** The SDK's request for a streamed chat completion, minus its body: where it goes and with which headers. */
interface PreparedRequest {
  url: string;
  headers: Record<string, string>;
}

interface ChatTransport {
  fetch: typeof fetch;
  /** The request the SDK builds for a call with this timeout, built once per timeout and kept. */
  prepared(timeoutMs: number): Promise<PreparedRequest>;
}

/**
 * The SDK builds the request (`buildRequest`, its public hook: URL, auth, its own headers), once per
 * timeout (its `X-Stainless-Timeout` header is the one that varies; retries are ours, so its retry
 * count stays 0 and it sets no idempotency key for OpenAI). Each call then sends those headers with
 * its own body through one `fetch`: the SDK's per-call path (headers merged through native
 * `Headers` calls, URL and logging work, hooks for credentials this client never uses) cost about
 * a quarter of a call's CPU in workerd (`npm run bench:model-call`, docs/benchmarks.md). A test holds
 * the replayed request to the one the SDK itself sends.
 */
async function prepareChatRequest(sdk: OpenAI, timeoutMs: number): Promise<PreparedRequest> {
  const { req, url } = await sdk.buildRequest({ method: "post", path: "/chat/completions", body: {}, stream: true, timeout: timeoutMs });
  return { url, headers: Object.fromEntries(new Headers(req.headers).entries()) };
}

/** What the SDK throws for an error status: its own error classes, from the body as it reads it. */
async function toStatusError(response: Response): Promise<InstanceType<typeof OpenAI.APIError>> {
  const text = await response.text().catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  // As the SDK's makeStatusError: a JSON object without `error` is the error itself, and the text
  // is the message only when the body is not JSON.
  const error = isRecord(json) && json.error == null ? { error: json } : json;
  return OpenAI.APIError.generate(response.status, error as object | undefined, json ? undefined : text, response.headers);
}

async function completeOnce(client: ChatTransport, apiKey: string, request: ModelRequest): Promise<ModelCallResult> {
  const releaseSlot = (): void => request.headerSlot?.release();
  const startedAt = Date.now();
  let ttfbMs: number | null = null;
  // The SDK's `timeout` only covers the wait for response headers; this deadline also bounds the
  // streamed body, so a call never holds its lease longer than timeout_s.
  const deadline = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    deadline.abort();
  }, request.timeoutMs);
  const abortedByCaller = (): void => deadline.abort();
  if (request.signal?.aborted === true) deadline.abort();
  else request.signal?.addEventListener("abort", abortedByCaller, { once: true });
  let usage: Usage | null = null;
  let streaming = false;
  const timing = (): CallTiming => ({ startedAt, latencyMs: Math.max(0, Date.now() - startedAt), ttfbMs });
  const fail = (failure: UpstreamFailure): ModelCallResult => ({
    ok: false,
    error: classifyUpstreamError(scrubKey(failure, apiKey), Date.now()),
    usage,
    ...timing(),
  });

  try {
    // Streaming: a Worker invocation may have only 6 connections waiting for response headers;
    // a streamed response sends its headers at once and frees the slot, so one consumer
    // invocation can keep many model calls open (docs/architecture.md §4).
    // The SDK's request with this call's body (prepareChatRequest says why not the SDK's create());
    // an error status becomes the SDK's APIError; the body is read by readChatStream
    // (src/model/chat-stream.ts says why not by the SDK's Stream).
    const prepared = await client.prepared(request.timeoutMs);
    const response = await client.fetch(prepared.url, {
      method: "POST",
      headers: prepared.headers,
      body: JSON.stringify(toParams(request)),
      signal: deadline.signal,
    });
    if (!response.ok) throw await toStatusError(response);
    // Headers are here: the connection no longer waits for them, so its slot frees.
    ttfbMs = Math.max(0, Date.now() - startedAt);
    releaseSlot();
    streaming = true;
    // Some OpenAI-compatible servers ignore `stream: true` and answer with one JSON body, which
    // the SDK would read as an empty event stream. Read it as what it is (the stream is never iterated).
    if (isJsonMediaType(response.headers.get("content-type"))) {
      const answer = toJsonAnswer(await response.text());
      usage = answer.usage;
      if (answer.kind === "ok") return { ok: true, text: answer.text, finishReason: answer.finishReason, usage, toolCalls: answer.toolCalls, ...timing() };
      return fail(answer.failure);
    }
    let text = "";
    let finishReason: string | null = null;
    // Each chunk's raw `delta.tool_calls`, normalized across vendor dialects once the stream ends.
    const toolDeltas: unknown[] = [];
    try {
      await readChatStream(response, deadline.signal, (chunk) => {
        const raw = extractStreamUsage(chunk);
        const chunkUsage = raw === undefined ? null : normalizeUsage(raw);
        if (chunkUsage !== null) usage = chunkUsage;
        // Some vendors send keep-alive or usage-only chunks without `choices`, whatever the types say.
        const choices = isRecord(chunk) && Array.isArray(chunk.choices) ? chunk.choices : [];
        const choice: unknown = choices[0];
        if (!isRecord(choice)) return;
        const delta = isRecord(choice.delta) ? choice.delta : null;
        const piece = delta?.content;
        if (typeof piece === "string") text += piece;
        const calls: unknown = delta?.tool_calls;
        if (calls !== undefined && calls !== null) toolDeltas.push(calls);
        if (typeof choice.finish_reason === "string") finishReason = choice.finish_reason;
      });
    } catch (error) {
      // Only the chunks after the finish_reason were lost (at most the usage): the answer is
      // complete and paid for, so it is kept, like one whose deadline hit at that point.
      if (finishReason === null) throw error;
    }
    // A finished answer is kept even if the deadline hit (or the body broke) while waiting for the
    // usage chunk; its usage is then recorded as missing.
    if (finishReason !== null) return { ok: true, text, finishReason, usage, toolCalls: accumulateToolCalls(toolDeltas), ...timing() };
    // The body ended (or was aborted) before a finished choice.
    return fail(timedOut ? timeoutFailure(request.timeoutMs) : { kind: "truncated" });
  } catch (error) {
    return fail(toUpstreamFailure(error, { timedOut, streaming, timeoutMs: request.timeoutMs }));
  } finally {
    releaseSlot();
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", abortedByCaller);
  }
}

type JsonAnswer = { usage: Usage | null } & (
  | { kind: "ok"; text: string; finishReason: string; toolCalls: ToolCall[] }
  | { kind: "failed"; failure: UpstreamFailure }
);

/** A whole chat completion (or an error object) sent as JSON with status 200. */
function toJsonAnswer(text: string): JsonAnswer {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { kind: "failed", usage: null, failure: { kind: "malformed", message: "upstream answered with a body that is not valid JSON" } };
  }
  const raw = extractStreamUsage(body);
  const usage = raw === undefined ? null : normalizeUsage(raw);
  const choice = isRecord(body) && Array.isArray(body.choices) ? body.choices[0] : undefined;
  const message = isRecord(choice) && isRecord(choice.message) ? choice.message : null;
  const finishReason = isRecord(choice) ? choice.finish_reason : undefined;
  if (message !== null && typeof finishReason === "string") {
    const toolCalls = message.tool_calls === undefined || message.tool_calls === null ? [] : accumulateToolCalls([message.tool_calls]);
    return { kind: "ok", usage, text: typeof message.content === "string" ? message.content : "", finishReason, toolCalls };
  }
  // An error object with status 200: the classifier reads its message (a retryable upstream_error).
  if (isRecord(body) && body.error !== undefined) return { kind: "failed", usage, failure: { kind: "http", body } };
  return { kind: "failed", usage, failure: { kind: "malformed", message: "upstream JSON answer has no finished choice" } };
}

function isJsonMediaType(contentType: string | null): boolean {
  const mediaType = contentType?.split(";")[0]?.trim().toLowerCase() ?? "";
  return mediaType === "application/json" || mediaType.endsWith("+json");
}

function toParams(request: ModelRequest): ChatCompletionCreateParamsStreaming | Record<string, unknown> {
  const body = request.passthrough;
  if (body !== undefined) {
    const limited = body.max_tokens !== undefined || body.max_completion_tokens !== undefined;
    return {
      ...body,
      model: request.model,
      ...(limited ? {} : { max_tokens: request.maxOutputTokens }),
      stream: true,
      stream_options: { include_usage: true },
    };
  }
  const format = request.responseFormat;
  const tools = request.tools !== null && request.tools.length > 0 ? request.tools : null;
  return {
    model: request.model,
    // ChatMessage is the subset of the SDK's message params that the agent loop writes.
    messages: [...request.messages],
    ...(tools === null ? {} : { tools: [...tools], tool_choice: "auto" as const }),
    ...(tools === null || request.parallelToolCalls === null ? {} : { parallel_tool_calls: request.parallelToolCalls }),
    max_tokens: request.maxOutputTokens,
    stream: true,
    stream_options: { include_usage: true },
    // "text" is every upstream's default; some OpenAI-compatible servers reject the field.
    ...(format === null || format.type === "text" ? {} : { response_format: format }),
  };
}

function timeoutFailure(timeoutMs: number): UpstreamFailure {
  return { kind: "timeout", message: `no complete response within ${timeoutMs} ms` };
}

/** Maps what the SDK (or the stream under it) threw to the classifier's input. */
function toUpstreamFailure(error: unknown, context: { timedOut: boolean; streaming: boolean; timeoutMs: number }): UpstreamFailure {
  // Our deadline surfaces as APIUserAbortError before the headers; the SDK's own as a timeout error.
  if (context.timedOut || error instanceof OpenAI.APIConnectionTimeoutError) return timeoutFailure(context.timeoutMs);
  if (error instanceof OpenAI.APIConnectionError) return { kind: "connection", message: error.message };
  // A SyntaxError for an SSE event whose data is not JSON (readChatStream, as the SDK).
  if (error instanceof SyntaxError) return { kind: "malformed", message: error.message };
  // An error event inside a 200 stream: no status, so the classifier calls it a retryable
  // upstream_error, with the upstream's own message.
  if (error instanceof StreamErrorEvent) return { kind: "http", headers: toHeaderRecord(error.headers), body: error.body };
  if (error instanceof OpenAI.APIError) {
    // status is undefined for an error event inside a 200 stream: the classifier calls that
    // a retryable upstream_error, with the upstream's own message.
    return {
      kind: "http",
      ...(error.status === undefined ? {} : { status: error.status }),
      headers: toHeaderRecord(error.headers),
      body: error.error ?? toRawBody(error),
    };
  }
  // Anything else after the headers arrived is the body breaking off (e.g. a reset connection).
  if (context.streaming) return { kind: "truncated", message: messageOf(error) };
  return { kind: "connection", message: messageOf(error) };
}

function toHeaderRecord(headers: Headers | undefined): Record<string, string> {
  return headers === undefined ? {} : Object.fromEntries(headers.entries());
}

/**
 * The SDK keeps only `body.error` of a JSON error body; a non-JSON body (an HTML 502 page, plain
 * text) ends up in the message after the status, where the classifier can still use it.
 */
function toRawBody(error: InstanceType<typeof OpenAI.APIError>): string | undefined {
  const prefix = error.status === undefined ? "" : `${error.status} `;
  const text = error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
  return text === "status code (no body)" || text === "(no status code or body)" ? undefined : text;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * The classifier redacts key-shaped strings; this also removes the configured key verbatim (before
 * the message is shortened, which could leave half a key), since a self-hosted upstream's key may
 * look like anything and some upstreams echo the key they were sent.
 */
function scrubKey(failure: UpstreamFailure, apiKey: string): UpstreamFailure {
  if (apiKey.length === 0) return failure;
  const scrub = (value: unknown): unknown => {
    if (typeof value === "string") return value.split(apiKey).join("[redacted]");
    if (Array.isArray(value)) return value.map(scrub);
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v)]));
    }
    return value;
  };
  return {
    ...failure,
    ...(failure.message === undefined ? {} : { message: failure.message.split(apiKey).join("[redacted]") }),
    ...(failure.body === undefined ? {} : { body: scrub(failure.body) }),
  };
}
