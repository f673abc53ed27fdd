// The mock model HTTP server (OpenAI-compatible, 127.0.0.1 only): routing, request lifecycle, CLI.
// What is answered lives in answer.ts and the modules it uses; this file decides when and how it is sent.

import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { buildAnswer } from "./answer.ts";
import { ERROR_STATUS, FaultPicker, RpmLimiter, TpmLimiter, contextLengthBody, faultResponse, isFaultKind, retryAfterHeaders } from "./faults.ts";
import type { FaultKind, TpmTicket } from "./faults.ts";
import { fixtureText } from "./fixtures.ts";
import { MAX_LATENCY_MS, sampleLatency } from "./latency.ts";
import { completionObject, errorBody, validateChatRequest } from "./openai.ts";
import type { ChunkMeta, ErrorBody } from "./openai.ts";
import { createPrng } from "./prng.ts";
import { parseRatesCli, parseScenario } from "./scenario.ts";
import type { Scenario } from "./scenario.ts";
import { Stats } from "./stats.ts";
import type { RequestSpan, StatsSnapshot } from "./stats.ts";
import { streamPlan } from "./stream.ts";
import type { StreamEvent } from "./stream.ts";
import { PREFIX_MIN_TOKENS, PrefixCache, toCacheText, toPrefillSkippedMs, toPrefixBlocks, type PrefixBlocks } from "./prefix-cache.ts";
import { countPromptTokens } from "./text.ts";
import { TOOL_DIALECTS, defaultToolDialect, isToolDialect } from "./tool-dialect.ts";
import type { ToolDialect } from "./tool-dialect.ts";
import { USAGE_SHAPES, isUsageShape, usageReport } from "./usage.ts";
import type { UsageShape } from "./usage.ts";
import { SIGNATURE_HEADER, lintFindings, verifyWebhookSignature } from "./webhook.ts";

export type { Scenario } from "./scenario.ts";
export type { LatencySpec } from "./latency.ts";
export type { FaultKind, ScriptStep } from "./faults.ts";
export type { RequestSpan, StatsSnapshot, TokenCounts } from "./stats.ts";
export type { NormalizedUsage, UsageReport, UsageShape } from "./usage.ts";
export { USAGE_SHAPES } from "./usage.ts";
export type { ToolDialect } from "./tool-dialect.ts";
export { TOOL_DIALECTS, defaultToolDialect } from "./tool-dialect.ts";
export { SIGNATURE_HEADER, signWebhook } from "./webhook.ts";

export const DEFAULT_MODELS: readonly string[] = ["mock-1", "gpt-4.1", "claude-sonnet-4.5", "gemini-2.5-flash", "deepseek-v3.2", "kimi-k2.5"];
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface MockModelOptions extends Scenario {
  /** TCP port on 127.0.0.1; 0 (default) = ephemeral. */
  port?: number;
  /** Ids listed by GET /v1/models (any model name is accepted by completions). */
  models?: readonly string[];
  /** Request bodies above this size get 413 (default 4 MiB). */
  max_body_bytes?: number;
  /** Milliseconds clock of the RPM/TPM windows (default `performance.now`); tests pass a fake one. */
  clock?: () => number;
  /** Alias of the scenario field `tool_dialect` (the initial scenario's value wins if both are set). */
  toolDialect?: ToolDialect;
  /** Alias of the scenario field `ttfb_ms` (the initial scenario's value wins if both are set). */
  ttfbMs?: number;
  /**
   * Context window of every model, in tokens (default unlimited): a request whose prompt tokens +
   * max_tokens exceed it gets 400 context_length_exceeded. A server setting: setScenario keeps it.
   */
  contextTokens?: number;
  /** Per-model context window overriding `contextTokens`. */
  context_tokens_by_model?: Record<string, number>;
  /** When set, POST /tools/lint requires a valid x-edgeswarm-signature made with this secret. */
  webhookSecret?: string;
  /**
   * Keep the spans (arrival to end) of up to this many chat requests since the last reset, for
   * `requestSpans()` (default 0: none). A server setting: setScenario keeps it.
   */
  keepRequestSpans?: number;
}

export interface MockModelHandle {
  /** `http://127.0.0.1:PORT` (append `/v1` for an OpenAI client baseURL). */
  url: string;
  port: number;
  /** Stops listening and drops every open connection (including hung requests). */
  close(): Promise<void>;
  stats(): StatsSnapshot;
  /** The spans of the chat requests since the last reset (empty unless `keepRequestSpans` is set). */
  requestSpans(): RequestSpan[];
  resetStats(): void;
  /** Replaces the whole scenario (validated; throws on invalid input) and re-seeds the PRNG. */
  setScenario(scenario: Scenario): void;
  /** The current scenario; `script` lists only the steps not consumed yet. */
  getScenario(): Scenario;
}

/** Stats key for an API key: never the key itself. */
export const keyIdOf = (apiKey: string): string => `key_${createHash("sha256").update(apiKey).digest("hex").slice(0, 12)}`;

const JSON_TYPE = "application/json";
const TEXT_TYPE = "text/plain; charset=utf-8";
const MOCK_HEADER = { "x-mock-model": "true" } as const;

interface State {
  scenario: Scenario;
  latencyPrng: ReturnType<typeof createPrng>;
  picker: FaultPicker;
  rpm: RpmLimiter | undefined;
  tpm: TpmLimiter | undefined;
  /** Invalid answers still to give (scenario invalid_json / invalid_plans, counted down). */
  left: { invalid_json: number; invalid_plans: number };
  /** Prompt prefixes processed so far (a new scenario starts with a cold cache); null when off. */
  prefixCache: PrefixCache | null;
}

function makeState(scenario: Scenario): State {
  const seed = scenario.seed ?? 1;
  return {
    scenario: { ...scenario, seed },
    latencyPrng: createPrng(seed),
    picker: new FaultPicker(scenario.script ?? [], scenario.rates ?? {}, createPrng(seed ^ 0x5bd1e995)),
    rpm: scenario.rpm_per_key !== undefined && scenario.rpm_per_key > 0 ? new RpmLimiter(scenario.rpm_per_key) : undefined,
    tpm: scenario.tpm_per_key !== undefined && scenario.tpm_per_key > 0 ? new TpmLimiter(scenario.tpm_per_key) : undefined,
    left: { invalid_json: scenario.invalid_json ?? 0, invalid_plans: scenario.invalid_plans ?? 0 },
    prefixCache: scenario.prefix_cache === false ? null : new PrefixCache(),
  };
}

const isLimit = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n > 0;

/** A per-request milliseconds header (x-mock-latency-ms, x-mock-ttfb-ms): undefined when absent, NaN when invalid. */
function msHeader(req: IncomingMessage, name: string): number | undefined {
  const raw = req.headers[name];
  if (raw === undefined) return undefined;
  const n = typeof raw === "string" ? Number(raw) : Number.NaN;
  return Number.isFinite(n) && n >= 0 ? n : Number.NaN;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...MOCK_HEADER, "content-type": JSON_TYPE, "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A bug in the mock must not take the server down: answer 500 (or drop the connection). */
function internalError(res: ServerResponse, e: unknown): void {
  process.stderr.write(`mock-model: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  if (!res.headersSent) sendJson(res, 500, errorBody("Internal error in the mock model.", "server_error", null, "mock_internal_error"));
  else res.destroy();
}

type Body = { ok: true; text: string } | { ok: false; reason: "too_large" | "aborted" };

function readBody(req: IncomingMessage, limit: number): Promise<Body> {
  return new Promise((resolve) => {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > limit) {
      resolve({ ok: false, reason: "too_large" });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (b: Body): void => {
      if (!settled) {
        settled = true;
        resolve(b);
      }
    };
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.pause();
        settle({ ok: false, reason: "too_large" });
      } else chunks.push(c);
    });
    req.on("end", () => settle({ ok: true, text: Buffer.concat(chunks, size).toString("utf8") }));
    req.on("error", () => settle({ ok: false, reason: "aborted" }));
    req.on("close", () => settle({ ok: false, reason: "aborted" }));
  });
}

/** Starts the mock on 127.0.0.1 and resolves once it is listening. */
export async function startMockModel(options: MockModelOptions = {}): Promise<MockModelHandle> {
  const {
    port = 0,
    models = DEFAULT_MODELS,
    max_body_bytes: maxBody = DEFAULT_MAX_BODY_BYTES,
    clock = () => performance.now(),
    toolDialect,
    ttfbMs,
    contextTokens,
    context_tokens_by_model: contextByModel = {},
    webhookSecret,
    keepRequestSpans = 0,
    ...scenarioInput
  } = options;
  if (contextTokens !== undefined && !isLimit(contextTokens)) throw new Error("mock-model: contextTokens must be an integer > 0");
  for (const [model, n] of Object.entries(contextByModel))
    if (!isLimit(n)) throw new Error(`mock-model: context_tokens_by_model.${model} must be an integer > 0`);
  const contextLimit = (model: string): number | undefined => contextByModel[model] ?? contextTokens;
  const aliases = { ...(toolDialect !== undefined ? { tool_dialect: toolDialect } : {}), ...(ttfbMs !== undefined ? { ttfb_ms: ttfbMs } : {}) };
  const checked = parseScenario(JSON.parse(JSON.stringify({ ...aliases, ...scenarioInput })));
  if (!checked.ok) throw new Error(`mock-model: ${checked.error}`);
  let state = makeState(checked.value);
  if (!Number.isInteger(keepRequestSpans) || keepRequestSpans < 0) throw new Error("mock-model: keepRequestSpans must be an integer >= 0");
  const stats = new Stats({ keepSpans: keepRequestSpans });
  const idPrefix = randomBytes(4).toString("hex");
  let idCounter = 0;
  const keyIds = new Map<string, string>();

  const keyIdCached = (key: string): string => {
    let id = keyIds.get(key);
    if (id === undefined) {
      if (keyIds.size > 10_000) keyIds.clear();
      id = keyIdOf(key);
      keyIds.set(key, id);
    }
    return id;
  };

  const setScenario = (input: unknown): void => {
    const r = parseScenario(input);
    if (!r.ok) throw new Error(r.error);
    state = makeState(r.value);
  };
  /** The scenario as it stands: `script`, `invalid_json` and `invalid_plans` show only what is left. */
  const getScenario = (): Scenario => {
    const sc = state.scenario;
    return {
      ...sc,
      ...(sc.script ? { script: state.picker.remainingScript() } : {}),
      ...(sc.invalid_json !== undefined ? { invalid_json: state.left.invalid_json } : {}),
      ...(sc.invalid_plans !== undefined ? { invalid_plans: state.left.invalid_plans } : {}),
    };
  };

  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    try {
      route(req, res);
    } catch (e) {
      internalError(res, e);
    }
  });

  function route(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
    const method = req.method ?? "GET";
    switch (`${method} ${path}`) {
      case "POST /v1/chat/completions":
        chat(req, res).catch((e: unknown) => internalError(res, e));
        return;
      case "GET /v1/models": {
        if (!authKey(req, res)) return;
        sendJson(res, 200, { object: "list", data: models.map(modelObject) });
        return;
      }
      case "GET /stats":
        sendJson(res, 200, stats.snapshot());
        return;
      case "POST /stats/reset":
        stats.reset();
        sendJson(res, 200, stats.snapshot());
        return;
      case "GET /healthz":
        sendJson(res, 200, { ok: true, mock: true });
        return;
      case "GET /admin/scenario":
        sendJson(res, 200, getScenario());
        return;
      case "POST /admin/scenario":
        adminScenario(req, res).catch((e: unknown) => internalError(res, e));
        return;
      case "POST /tools/lint":
        lintWebhook(req, res).catch((e: unknown) => internalError(res, e));
        return;
    }
    if (method === "GET" && path.startsWith("/fixtures/")) {
      fixture(req, res, path);
      return;
    }
    if (method === "GET" && path.startsWith("/v1/models/")) {
      if (!authKey(req, res)) return;
      let id = path.slice("/v1/models/".length);
      try {
        id = decodeURIComponent(id);
      } catch {
        // keep the raw id
      }
      sendJson(res, 200, modelObject(id));
      return;
    }
    const known = ["/v1/chat/completions", "/v1/models", "/stats", "/stats/reset", "/healthz", "/admin/scenario", "/tools/lint"];
    if (known.includes(path) || path.startsWith("/fixtures/")) {
      sendJson(res, 405, errorBody(`Method ${method} not allowed on ${path}`, "invalid_request_error", null, "method_not_allowed"));
      return;
    }
    sendJson(res, 404, errorBody(`Invalid URL (${method} ${path})`, "invalid_request_error", null, "not_found"));
  }

  function modelObject(id: string): Record<string, unknown> {
    return { id, object: "model", created: 1_700_000_000, owned_by: "mock" };
  }

  /** The bearer key, or undefined after answering 401. */
  function authKey(req: IncomingMessage, res: ServerResponse): string | undefined {
    const h = req.headers.authorization;
    const m = typeof h === "string" ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
    if (m?.[1] !== undefined) return m[1];
    sendJson(
      res,
      401,
      errorBody(
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY). (mock)",
        "invalid_request_error",
        null,
        "missing_api_key",
      ),
    );
    return undefined;
  }

  /** GET /fixtures/<path>: a deterministic text file; /fixtures/redirect?to=URL: 302 to URL (for SSRF tests). */
  function fixture(req: IncomingMessage, res: ServerResponse, path: string): void {
    stats.count("fixture_requests");
    const rest = path.slice("/fixtures/".length);
    if (rest === "redirect") {
      const to = new URL(req.url ?? "/", "http://127.0.0.1").searchParams.get("to");
      if (to === null || to === "") {
        sendJson(res, 400, errorBody("Missing query parameter 'to'.", "invalid_request_error", "to", "missing_required_parameter"));
        return;
      }
      const text = `[mock] redirecting to ${to}\n`;
      res.writeHead(302, { ...MOCK_HEADER, location: to, "content-type": TEXT_TYPE, "content-length": Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    let name = rest;
    try {
      name = decodeURIComponent(rest);
    } catch {
      // keep the raw path
    }
    const text = fixtureText(name);
    res.writeHead(200, { ...MOCK_HEADER, "content-type": TEXT_TYPE, "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
    res.end(text);
  }

  /** POST /tools/lint: a webhook tool target; checks x-edgeswarm-signature when a secret is set. */
  async function lintWebhook(req: IncomingMessage, res: ServerResponse): Promise<void> {
    stats.count("webhook_calls");
    const body = await readBody(req, maxBody);
    if (!body.ok) {
      if (body.reason === "too_large") sendJson(res, 413, errorBody("Request body too large.", "invalid_request_error"), { connection: "close" });
      return;
    }
    if (webhookSecret !== undefined) {
      const header = req.headers[SIGNATURE_HEADER];
      const check = verifyWebhookSignature(webhookSecret, typeof header === "string" ? header : undefined, body.text, Math.floor(Date.now() / 1000));
      if (!check.ok) {
        stats.count("webhook_rejected");
        sendJson(res, 401, errorBody(`Invalid ${SIGNATURE_HEADER} (${check.reason}). (mock)`, "invalid_request_error", null, "invalid_signature"));
        return;
      }
    }
    sendJson(res, 200, { findings: lintFindings(body.text) });
  }

  async function adminScenario(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, maxBody);
    if (!body.ok) {
      if (body.reason === "too_large") sendJson(res, 413, errorBody("Request body too large.", "invalid_request_error"), { connection: "close" });
      return;
    }
    try {
      setScenario(JSON.parse(body.text));
    } catch (e) {
      sendJson(res, 400, errorBody(`Invalid scenario: ${e instanceof Error ? e.message : String(e)}`, "invalid_request_error"));
      return;
    }
    sendJson(res, 200, getScenario());
  }

  async function chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const startedAt = stats.begin();
    if (req.headers["cf-worker"] !== undefined) stats.count("cf_worker_requests");
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    /** The TPM charge of an admitted request, and what it settles to (set once an answer body starts). */
    let tpmTicket: TpmTicket | undefined;
    let tpmCharge = 0;
    let toolCallAnswer = false;
    let headersOut = false;
    /** Ends the waiting-for-headers accounting exactly once: headers went out, or the request ended. */
    const headersSent = (): void => {
      if (headersOut) return;
      headersOut = true;
      stats.headers();
    };
    /** Ends the in-flight accounting exactly once (synchronously, before the client can see the end). */
    const finish = (outcome: "completed" | "aborted" | "other"): void => {
      if (done) return;
      done = true;
      headersSent();
      tpmTicket?.settle(tpmCharge);
      stats.end(outcome, startedAt);
      if (outcome === "completed" && toolCallAnswer) stats.count("tool_call_responses");
    };
    res.on("close", () => {
      if (timer !== undefined) clearTimeout(timer);
      finish("aborted");
    });
    const fail = (status: number, body: ErrorBody, headers?: Record<string, string>): void => {
      stats.status(status);
      finish("other");
      sendJson(res, status, body, headers);
    };

    const apiKey = authKey(req, res);
    if (apiKey === undefined) {
      stats.status(401);
      finish("other");
      return;
    }
    const keyId = keyIdCached(apiKey);

    const body = await readBody(req, maxBody);
    if (!body.ok) {
      if (body.reason === "too_large")
        fail(413, errorBody(`Request body too large (limit ${maxBody} bytes).`, "invalid_request_error", null, "request_too_large"), { connection: "close" });
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.text);
    } catch {
      fail(
        400,
        errorBody(
          "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.) (mock)",
          "invalid_request_error",
        ),
      );
      return;
    }
    const v = validateChatRequest(parsed);
    if (!v.ok) {
      fail(400, v.error);
      return;
    }
    const request = v.value;
    stats.attribute(request.model, keyId);

    const latencyOverride = msHeader(req, "x-mock-latency-ms");
    const ttfbOverride = msHeader(req, "x-mock-ttfb-ms");
    for (const [name, value] of [
      ["x-mock-latency-ms", latencyOverride],
      ["x-mock-ttfb-ms", ttfbOverride],
    ] as const) {
      if (Number.isNaN(value)) {
        fail(400, errorBody(`Invalid ${name} header: expected a number ≥ 0.`, "invalid_request_error", null, "invalid_mock_header"));
        return;
      }
    }
    const outputHeader = req.headers["x-mock-output-tokens"];
    let targetTokens: number | undefined;
    if (typeof outputHeader === "string") {
      targetTokens = Number(outputHeader);
      if (!Number.isInteger(targetTokens) || targetTokens < 1) {
        fail(400, errorBody("Invalid x-mock-output-tokens header: expected an integer ≥ 1.", "invalid_request_error", null, "invalid_mock_header"));
        return;
      }
    }
    const shapeHeader = req.headers["x-mock-usage-shape"];
    if (shapeHeader !== undefined && !isUsageShape(shapeHeader)) {
      fail(
        400,
        errorBody(`Invalid x-mock-usage-shape header: expected one of ${USAGE_SHAPES.join(", ")}.`, "invalid_request_error", null, "invalid_mock_header"),
      );
      return;
    }
    const dialectHeader = req.headers["x-mock-tool-dialect"];
    if (dialectHeader !== undefined && !isToolDialect(dialectHeader)) {
      fail(
        400,
        errorBody(`Invalid x-mock-tool-dialect header: expected one of ${TOOL_DIALECTS.join(", ")}.`, "invalid_request_error", null, "invalid_mock_header"),
      );
      return;
    }
    const sc = state.scenario;
    const shape: UsageShape = shapeHeader ?? sc.usage_shape_by_model?.[request.model] ?? sc.usage_shape ?? "openai";
    const dialect: ToolDialect = dialectHeader ?? sc.tool_dialect_by_model?.[request.model] ?? sc.tool_dialect ?? defaultToolDialect(request.model);

    const promptTokens = countPromptTokens(request.messages, request.raw_tools);
    stats.prompt(promptTokens);
    const window = contextLimit(request.model);
    if (window !== undefined && promptTokens + (request.max_tokens ?? 0) > window) {
      stats.count("context_exceeded");
      fail(400, contextLengthBody(window, promptTokens, request.max_tokens, "(mock)"));
      return;
    }

    // The answer is deterministic, so it is built now: the TPM reservation may need its size.
    const answer = buildAnswer(request, {
      targetTokens,
      dialect,
      promptTokens,
      invalidJson: state.left.invalid_json > 0,
      invalidPlan: state.left.invalid_plans > 0,
    });
    toolCallAnswer = answer.tool_calls !== undefined;
    if (answer.role === "planner") stats.count("planner_requests");
    if (answer.role === "reducer") stats.count("reducer_requests");
    if (answer.repair) stats.count("repair_requests");
    // The prefix cache is looked up as the request arrives, and holds its prefixes only once its
    // prefill is done (when its first byte goes out, below).
    const prefixCache = state.prefixCache;
    const prefixBlocks: PrefixBlocks | null = prefixCache !== null && promptTokens >= PREFIX_MIN_TOKENS ? toPrefixBlocks(toCacheText(request)) : null;
    const cachedTokens = prefixBlocks === null || prefixCache === null ? 0 : prefixCache.lookup(prefixBlocks, Date.now());
    const prefilled = (): void => {
      if (prefixBlocks !== null) prefixCache?.store(prefixBlocks, Date.now());
    };
    const report = usageReport(answer.usage, shape, { cachedShare: sc.cached_share ?? 0, cachedTokens, maxTokens: request.max_tokens });

    // Fault decision: forced header > per-key RPM limit > per-key TPM limit > script > rates.
    const extraHeaders: Record<string, string> = {};
    let fault: FaultKind | undefined;
    const forced = req.headers["x-mock-fault"];
    if (typeof forced === "string" && forced !== "ok") {
      if (!isFaultKind(forced)) {
        fail(400, errorBody(`Unknown x-mock-fault kind "${forced}".`, "invalid_request_error", null, "invalid_mock_header"));
        return;
      }
      fault = forced;
    } else if (forced === undefined) {
      const st = state;
      const now = clock();
      if (st.rpm !== undefined) {
        const d = st.rpm.check(keyId, now);
        if (!d.ok) {
          stats.fault("rpm_per_key");
          fail(
            429,
            errorBody(
              `Rate limit reached for ${request.model} on requests per min (RPM): Limit ${st.rpm.limit}. Please try again in ${Math.ceil(d.retryAfterMs / 1000)}s. (mock)`,
              "requests",
              null,
              "rate_limit_exceeded",
            ),
            {
              ...retryAfterHeaders(d.retryAfterMs),
              "x-ratelimit-limit-requests": String(st.rpm.limit),
              "x-ratelimit-remaining-requests": "0",
              "x-ratelimit-reset-requests": `${d.retryAfterMs}ms`,
            },
          );
          return;
        }
        extraHeaders["x-ratelimit-limit-requests"] = String(st.rpm.limit);
        extraHeaders["x-ratelimit-remaining-requests"] = String(d.remaining);
        extraHeaders["x-ratelimit-reset-requests"] = `${d.resetMs}ms`;
      }
      if (st.tpm !== undefined) {
        // OpenAI-like: prompt + max_tokens is counted up front (without max_tokens: the completion
        // this answer will have), then settled to the actual total when the request ends.
        const reserve = report.normalized.prompt_tokens + (request.max_tokens ?? report.normalized.completion_tokens);
        const d = st.tpm.admit(keyId, now, reserve);
        if (!d.ok) {
          stats.fault("tpm_per_key");
          const limit = st.tpm.limit;
          const base = { "x-ratelimit-limit-tokens": String(limit), "x-ratelimit-remaining-tokens": String(Math.max(0, limit - d.used)) };
          if (d.retryAfterMs === undefined) {
            fail(
              429,
              errorBody(
                `Request too large for ${request.model} on tokens per min (TPM): Limit ${limit}, Requested ${reserve}. The input or output tokens must be reduced in order to run successfully. (mock)`,
                "tokens",
                null,
                "rate_limit_exceeded",
              ),
              base,
            );
          } else {
            fail(
              429,
              errorBody(
                `Rate limit reached for ${request.model} on tokens per min (TPM): Limit ${limit}, Used ${d.used}, Requested ${reserve}. Please try again in ${(d.retryAfterMs / 1000).toFixed(3)}s. (mock)`,
                "tokens",
                null,
                "rate_limit_exceeded",
              ),
              { ...retryAfterHeaders(d.retryAfterMs), ...base, "x-ratelimit-reset-tokens": `${d.retryAfterMs}ms` },
            );
          }
          return;
        }
        tpmTicket = d.ticket;
        extraHeaders["x-ratelimit-limit-tokens"] = String(st.tpm.limit);
        extraHeaders["x-ratelimit-remaining-tokens"] = String(d.remaining);
        extraHeaders["x-ratelimit-reset-tokens"] = `${d.resetMs}ms`;
      }
      st.rpm?.record(keyId, now);
      fault = st.picker.pick();
    }

    if (fault !== undefined) {
      stats.fault(fault);
      extraHeaders["x-mock-fault-injected"] = fault;
      if (ERROR_STATUS[fault] !== undefined) {
        const r = faultResponse(fault, request.model, promptTokens, state.scenario.retry_after_s ?? 1);
        fail(r.status, r.body, { ...extraHeaders, ...r.headers });
        return;
      }
    }
    // An invalid answer counts against invalid_json / invalid_plans only when it is actually given.
    if (answer.spends !== undefined && (fault === undefined || fault === "no_usage")) state.left[answer.spends] = Math.max(0, state.left[answer.spends] - 1);

    const id = `${idPrefix}-${(++idCounter).toString(36)}`;
    const meta: ChunkMeta = { id: `chatcmpl-mock-${id}`, created: Math.floor(Date.now() / 1000), model: request.model };
    extraHeaders["x-request-id"] = `req_mock_${id}`;
    const modelLatency = state.scenario.latency_by_model?.[request.model];
    const sampledDelay = latencyOverride ?? sampleLatency(modelLatency ?? state.scenario.latency, state.latencyPrng);
    const coldTtfb = Math.min(ttfbOverride ?? state.scenario.ttfb_ms ?? 0, MAX_LATENCY_MS);
    // A cached prefix skips its prefill: the headers and the end both come that much sooner.
    const skipped = toPrefillSkippedMs(cachedTokens, state.scenario.prefill_ms_per_1k_tokens ?? 0, coldTtfb);
    const delay = Math.max(0, sampledDelay - skipped);
    const ttfb = coldTtfb - skipped;
    if (skipped > 0) extraHeaders["x-mock-prefill-skipped-ms"] = String(skipped);
    const after = (ms: number, fn: () => void): void => {
      timer = setTimeout(
        () => {
          timer = undefined;
          try {
            fn();
          } catch (e) {
            internalError(res, e);
          }
        },
        Math.min(ms, MAX_LATENCY_MS),
      );
    };

    if (fault === "drop") {
      // Cut the connection before any response byte, half-way through the latency: the client sees
      // a reset (ECONNRESET / "socket hang up"), as when a proxy or the upstream process dies.
      after(Math.max(ttfb, delay) / 2, () => req.socket.destroy());
      return;
    }

    if (request.stream) {
      // Headers go out after the ttfb (at once by default), long before the latency ends: a client
      // (e.g. a Worker) waits for headers only that long. Both times count from now.
      const sendHeaders = (): void => {
        res.writeHead(200, { ...MOCK_HEADER, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", ...extraHeaders });
        res.flushHeaders();
        stats.status(200);
        headersSent();
        prefilled();
        if (fault === "hang") return;
        const events = streamPlan(request, meta, answer, fault, report);
        // A latency below the ttfb ends the response right after the headers.
        after(Math.max(0, delay - ttfb), () => {
          tpmCharge = report.normalized.total_tokens;
          writeEvents(events, state.scenario.chunk_delay_ms ?? 0);
        });
      };
      if (ttfb > 0) after(ttfb, sendHeaders);
      else sendHeaders();
      return;
    }

    if (fault === "hang") return;
    // A non-streamed answer is sent whole, so its first byte is its last: never before the ttfb.
    after(Math.max(delay, ttfb), () => {
      if (res.destroyed) return;
      prefilled();
      tpmCharge = report.normalized.total_tokens;
      if (fault === "malformed" || fault === "truncated") {
        const full = JSON.stringify(completionObject(meta, answer, undefined));
        const cut = full.slice(0, Math.floor(full.length / 2));
        stats.status(200);
        finish("other");
        if (fault === "malformed") {
          res.writeHead(200, { ...MOCK_HEADER, "content-type": JSON_TYPE, "content-length": Buffer.byteLength(cut), ...extraHeaders });
          res.end(cut);
        } else {
          res.writeHead(200, { ...MOCK_HEADER, "content-type": JSON_TYPE, "content-length": Buffer.byteLength(full), ...extraHeaders });
          res.write(cut, () => res.destroy());
        }
        return;
      }
      const withUsage = fault !== "no_usage";
      if (withUsage) stats.usage(request.model, keyId, report);
      stats.status(200);
      finish("completed");
      sendJson(res, 200, completionObject(meta, answer, withUsage ? report.wire : undefined), extraHeaders);
    });

    /** Writes the plan; consecutive events go out as one write unless chunk_delay_ms spaces them. */
    function writeEvents(events: StreamEvent[], gapMs: number): void {
      let i = 0;
      const step = (): void => {
        let batch = "";
        while (i < events.length && !res.destroyed) {
          const ev = events[i++];
          if (ev === undefined) break;
          if (typeof ev === "string") {
            batch += ev;
            if (gapMs > 0 && i < events.length) {
              res.write(batch);
              after(gapMs, step);
              return;
            }
          } else if ("usage" in ev) {
            stats.usage(request.model, keyId, ev.usage);
          } else if (ev.end === "done") {
            finish(fault === "malformed" ? "other" : "completed");
            res.end(batch);
            return;
          } else {
            // truncated: flush what was written, then drop the connection without [DONE].
            finish("other");
            if (batch === "") res.destroy();
            else res.write(batch, () => res.destroy());
            return;
          }
        }
        if (batch !== "" && !res.destroyed) res.write(batch);
      };
      step();
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host: "127.0.0.1", backlog: 4096 }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const actualPort = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${actualPort}`,
    port: actualPort,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    stats: () => stats.snapshot(),
    requestSpans: () => [...stats.spans()],
    resetStats: () => stats.reset(),
    setScenario: (s: Scenario) => setScenario(JSON.parse(JSON.stringify(s))),
    getScenario,
  };
}

const HELP = `Usage: node dev/mock-model/server.ts [flags]   (a MOCK OpenAI-compatible model: outputs are fake)
  --port N                 port on 127.0.0.1 (default 8788; 0 = ephemeral)
  --latency SPEC           MS | uniform:MIN:MAX | normal:MEAN:SD | lognormal:MEDIAN:P95
  --latency-by-model LIST  model=SPEC,model=SPEC
  --ttfb MS                time to first byte: a stream's headers go out MS after the request (default 0)
  --chunk-delay-ms N       delay between streamed chunks
  --seed N                 PRNG seed (default 1)
  --models a,b,c           ids listed by GET /v1/models
  --scenario FILE.json     initial scenario (flags override its fields)
  --rpm-per-key N          per-API-key requests/minute limit
  --tpm-per-key N          per-API-key tokens/minute limit (prompt + max_tokens reserved up front)
  --usage-shape NAME       usage shape: ${USAGE_SHAPES.join(" | ")} (default openai)
  --usage-shape-by-model LIST  model=SHAPE,model=SHAPE
  --cached-share X         share of prompt tokens reported as cached, 0..1 (default 0)
  --no-prefix-cache        no prompt-prefix cache (default: prompts of ≥ 1,024 tokens are cached after their prefill)
  --prefill-ms-per-1k N    the prompt's prefill inside the ttfb, ms per 1,000 prompt tokens: cached tokens skip theirs (default 0)
  --fault-rate LIST        kind=p,... e.g. 429=0.2,500=0.05
  --script LIST            fault kinds for successive requests, e.g. 429,429,ok
  --retry-after S          retry-after for injected 429s, seconds (default 1)
  --max-body-bytes N       request body limit (default 4 MiB)
  --tool-dialect NAME      tool-call dialect: ${TOOL_DIALECTS.join(" | ")} (default by model name)
  --tool-dialect-by-model LIST  model=DIALECT,model=DIALECT
  --context-tokens N       context window: prompt + max_tokens above N → 400 context_length_exceeded
  --context-tokens-by-model LIST  model=N,model=N
  --webhook-secret S       secret for x-edgeswarm-signature on POST /tools/lint (default: env WEBHOOK_SECRET)`;

function die(message: string): never {
  process.stderr.write(`mock-model: ${message}\n`);
  process.exit(2);
}

/** CLI entry: parses flags, starts the server, prints one line, exits cleanly on SIGINT/SIGTERM. */
export async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      port: { type: "string", default: "8788" },
      latency: { type: "string" },
      "latency-by-model": { type: "string" },
      ttfb: { type: "string" },
      "chunk-delay-ms": { type: "string" },
      seed: { type: "string" },
      models: { type: "string" },
      scenario: { type: "string" },
      "rpm-per-key": { type: "string" },
      "tpm-per-key": { type: "string" },
      "usage-shape": { type: "string" },
      "usage-shape-by-model": { type: "string" },
      "cached-share": { type: "string" },
      "no-prefix-cache": { type: "boolean" },
      "prefill-ms-per-1k": { type: "string" },
      "fault-rate": { type: "string" },
      script: { type: "string" },
      "retry-after": { type: "string" },
      "max-body-bytes": { type: "string" },
      "tool-dialect": { type: "string" },
      "tool-dialect-by-model": { type: "string" },
      "context-tokens": { type: "string" },
      "context-tokens-by-model": { type: "string" },
      "webhook-secret": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help === true) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const raw: Record<string, unknown> = {};
  if (values.scenario !== undefined) {
    try {
      Object.assign(raw, JSON.parse(readFileSync(values.scenario, "utf8")));
    } catch (e) {
      die(`cannot read scenario ${values.scenario}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const num = (flag: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === "" || !Number.isFinite(n)) die(`--${flag} expects a number, got "${v}"`);
    return n;
  };
  const modelMap = (flag: string, v: string, what: string): Record<string, string> => {
    const map: Record<string, string> = {};
    for (const part of v.split(",")) {
      const eq = part.indexOf("=");
      if (eq <= 0) die(`--${flag} entry "${part}" should be model=${what}`);
      map[part.slice(0, eq)] = part.slice(eq + 1);
    }
    return map;
  };
  if (values.latency !== undefined) raw.latency = values.latency;
  if (values["latency-by-model"] !== undefined) raw.latency_by_model = modelMap("latency-by-model", values["latency-by-model"], "SPEC");
  if (values["usage-shape"] !== undefined) raw.usage_shape = values["usage-shape"];
  if (values["no-prefix-cache"] === true) raw.prefix_cache = false;
  if (values["usage-shape-by-model"] !== undefined) raw.usage_shape_by_model = modelMap("usage-shape-by-model", values["usage-shape-by-model"], "SHAPE");
  if (values["tool-dialect"] !== undefined) raw.tool_dialect = values["tool-dialect"];
  if (values["tool-dialect-by-model"] !== undefined) raw.tool_dialect_by_model = modelMap("tool-dialect-by-model", values["tool-dialect-by-model"], "DIALECT");
  if (values["fault-rate"] !== undefined) {
    const r = parseRatesCli(values["fault-rate"]);
    if (!r.ok) die(r.error);
    raw.rates = r.value;
  }
  if (values.script !== undefined) raw.script = values.script.split(",").filter((s) => s !== "");
  const numeric: Array<[string, string]> = [
    ["ttfb", "ttfb_ms"],
    ["chunk-delay-ms", "chunk_delay_ms"],
    ["seed", "seed"],
    ["rpm-per-key", "rpm_per_key"],
    ["tpm-per-key", "tpm_per_key"],
    ["cached-share", "cached_share"],
    ["prefill-ms-per-1k", "prefill_ms_per_1k_tokens"],
    ["retry-after", "retry_after_s"],
  ];
  for (const [flag, field] of numeric) {
    const n = num(flag, values[flag as keyof typeof values] as string | undefined);
    if (n !== undefined) raw[field] = n;
  }
  const scenario = parseScenario(raw);
  if (!scenario.ok) die(scenario.error);
  const port = num("port", values.port) ?? 8788;
  const maxBody = num("max-body-bytes", values["max-body-bytes"]);
  const models = values.models
    ?.split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const contextTokens = num("context-tokens", values["context-tokens"]);
  const contextByModel: Record<string, number> = {};
  if (values["context-tokens-by-model"] !== undefined) {
    for (const [model, n] of Object.entries(modelMap("context-tokens-by-model", values["context-tokens-by-model"], "N"))) {
      contextByModel[model] = num("context-tokens-by-model", n) ?? 0;
    }
  }
  const webhookSecret = values["webhook-secret"] ?? (process.env.WEBHOOK_SECRET || undefined);

  let handle: MockModelHandle;
  try {
    handle = await startMockModel({
      ...scenario.value,
      port,
      ...(models ? { models } : {}),
      ...(maxBody !== undefined ? { max_body_bytes: maxBody } : {}),
      ...(contextTokens !== undefined ? { contextTokens } : {}),
      context_tokens_by_model: contextByModel,
      ...(webhookSecret !== undefined ? { webhookSecret } : {}),
    });
  } catch (e) {
    die(e instanceof Error ? e.message : String(e));
  }
  process.stdout.write(`mock-model listening on ${handle.url} (this is a MOCK model: outputs are fake)\n`);
  let closing = false;
  const stop = (): void => {
    if (closing) return;
    closing = true;
    void handle.close().then(() => process.exit(0));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((e: unknown) => die(e instanceof Error ? e.message : String(e)));
}
