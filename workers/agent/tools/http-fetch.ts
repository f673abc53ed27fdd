// The built-in http_fetch tool: its definition as the model sees it, and one call of it. Every URL
// it requests, the first and each redirect target, passes checkFetchTarget first (the swarm's
// http_allowlist, no private addresses); the caller supplies `fetch`, limits and the policy.
import { z } from "zod";
import { checkFetchTarget } from "../../../src/core/ssrf-guard.ts";
import type { FetchPolicy } from "../../../src/core/ssrf-guard.ts";
import { toErrorMessage } from "../../../src/core/error-message.ts";

/** What a tool call hands back to the loop: `content` goes to the model either way. */
export interface ToolResult {
  ok: boolean;
  content: string;
}

const MAX_URL_CHARS = 2_048;
const MAX_BODY_CHARS = 100_000;
const MAX_HEADERS = 32;

export const HTTP_FETCH_TOOL = {
  type: "function",
  function: {
    name: "http_fetch",
    description:
      "Fetch a URL over HTTP(S) and return its status, content type and body text (long bodies are cut). " +
      "Only hosts on the swarm's http_allowlist can be reached, never private or internal addresses; redirects are followed within the same rules. " +
      "Binary bodies are not returned.",
    parameters: {
      type: "object",
      properties: {
        url: { type: "string", description: "Absolute http:// or https:// URL." },
        method: { type: "string", enum: ["GET", "POST"], default: "GET", description: "HTTP method (default GET)." },
        body: { type: "string", description: "Request body, for POST only." },
        headers: {
          type: "object",
          additionalProperties: { type: "string" },
          description:
            'Extra request headers, e.g. {"accept": "application/json"}. Cookie, Authorization, Host, Proxy-*, X-Forwarded-* and CF-* headers are dropped.',
        },
      },
      required: ["url"],
      additionalProperties: false,
    },
  },
} as const;

export interface HttpFetchSettings {
  policy: FetchPolicy;
  /** For the whole call: every redirect hop and reading the body. */
  timeoutMs: number;
  /** Body bytes read at most; the rest is cancelled unread. */
  maxResponseBytes: number;
  maxRedirects: number;
  fetch: typeof fetch;
}

const HttpFetchArgsSchema = z
  .strictObject({
    url: z.string().min(1, "url must not be empty").max(MAX_URL_CHARS, `url is longer than ${MAX_URL_CHARS} characters`),
    // Models write "get" as often as "GET".
    method: z
      .string()
      .transform((method) => method.toUpperCase())
      .pipe(z.enum(["GET", "POST"], { error: 'method must be "GET" or "POST"' }))
      .default("GET"),
    body: z.string().max(MAX_BODY_CHARS, `body is longer than ${MAX_BODY_CHARS} characters`).optional(),
    headers: z
      .record(z.string(), z.string({ error: "header values must be strings" }))
      .refine((headers) => Object.keys(headers).length <= MAX_HEADERS, `at most ${MAX_HEADERS} headers`)
      .optional(),
  })
  .refine((args) => args.body === undefined || args.method === "POST", { message: "a body is sent only with POST", path: ["body"] });

/**
 * One http_fetch call. ok:true for any HTTP answer (a 404 or 500 is news the model can act on),
 * as `HTTP <status> <content-type>`, a blank line, then the body text, with notes in brackets after
 * it (truncation, redirects, dropped headers). ok:false, with a message for the model, for bad
 * arguments, a refused URL or redirect target, too many redirects, a timeout or a network error.
 */
export async function runHttpFetch(args: Record<string, unknown>, settings: HttpFetchSettings): Promise<ToolResult> {
  const parsed = HttpFetchArgsSchema.safeParse(args);
  if (!parsed.success) {
    return fail(`http_fetch: invalid arguments: ${parsed.error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ")}`);
  }
  const { url, body } = parsed.data;
  let method: string = parsed.data.method;
  const first = checkFetchTarget(url, settings.policy);
  if (!first.ok) return fail(`http_fetch refused ${clip(url)}: ${first.reason}`);
  const prepared = toRequestHeaders(parsed.data.headers ?? {});
  if (!prepared.ok) return fail(`http_fetch: ${prepared.error}`);
  const { headers, dropped } = prepared;
  let requestBody = body;

  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`timed out after ${settings.timeoutMs} ms`)), settings.timeoutMs);
  let current = first.url.href;
  const hops: string[] = [];
  try {
    for (;;) {
      // Platform behaviour relied on: with `redirect: "manual"` a Worker's fetch resolves to the 3xx
      // response itself, status and headers intact, Location exactly as the server sent it (possibly
      // relative). Unlike a browser's opaque-redirect, nothing is hidden: workerd's
      // handleHttpResponse follows a redirect only in "follow" mode and otherwise returns the
      // response as is (cloudflare/workerd src/workerd/api/http.c++; Cloudflare's Request docs:
      // "manual: redirect responses will return from a fetch"). Node's undici does the same.
      const response = await untilAborted(
        settings.fetch(current, { method, headers, body: requestBody, redirect: "manual", signal: controller.signal }),
        controller.signal,
      );
      const location = response.headers.get("location");
      if (!REDIRECT_STATUSES.has(response.status) || location === null) {
        return { ok: true, content: await describeResponse(response, settings.maxResponseBytes, controller.signal, notesFor(hops, current, dropped)) };
      }
      discardBody(response);
      let next: string;
      try {
        next = new URL(location, current).href;
      } catch {
        return fail(`http_fetch: ${current} answered HTTP ${response.status} with an unusable Location header ${JSON.stringify(clip(location))}`);
      }
      if (hops.length >= settings.maxRedirects) {
        return fail(
          `http_fetch: too many redirects (more than ${settings.maxRedirects}); the last one, from ${current}, pointed to ${clip(next)}: fetch that URL directly if it is allowed`,
        );
      }
      const check = checkFetchTarget(next, settings.policy);
      if (!check.ok) return fail(`http_fetch refused the redirect from ${current} to ${clip(next)}: ${check.reason}`);
      // As the Fetch Standard (and every browser): 303 turns any method into GET, 301/302 turn
      // POST into GET; the body and its headers go. 307/308 repeat the request as it was.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
        method = "GET";
        requestBody = undefined;
        for (const name of BODY_HEADERS) headers.delete(name);
      }
      current = check.url.href;
      hops.push(current);
    }
  } catch (error) {
    if (controller.signal.aborted) {
      return fail(
        `http_fetch timed out after ${settings.timeoutMs} ms (${method} ${current}): the server did not answer in time; try again later or ask for something smaller`,
      );
    }
    return fail(`http_fetch could not reach ${current}: ${toErrorMessage(error)}`);
  } finally {
    clearTimeout(timer);
  }
}

const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
const BODY_HEADERS = ["content-type", "content-encoding", "content-language", "content-location", "content-length"];

/**
 * Headers a model may not set: credentials (cookie, authorization) it must not be handed or
 * invent, routing and client-identity headers a proxy or Cloudflare would trust (host, proxy-*,
 * x-forwarded-*, forwarded, cf-*), and framing the runtime owns.
 */
const DROPPED_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "cookie",
  "authorization",
  "forwarded",
  "x-real-ip",
  "true-client-ip",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "te",
  "upgrade",
]);
const DROPPED_PREFIXES = ["proxy-", "x-forwarded-", "cf-"];
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Some servers refuse requests without one; a model-supplied user-agent wins. */
const USER_AGENT = "edgeswarm-http-fetch/1";

type PreparedHeaders = { ok: true; headers: Headers; dropped: string[] } | { ok: false; error: string };

function toRequestHeaders(requested: Record<string, string>): PreparedHeaders {
  const headers = new Headers();
  const dropped: string[] = [];
  for (const [rawName, value] of Object.entries(requested)) {
    const name = rawName.trim().toLowerCase();
    if (!HEADER_NAME.test(name)) return { ok: false, error: `${JSON.stringify(clip(rawName))} is not a valid header name` };
    if (/[\r\n\0]/.test(value)) return { ok: false, error: `the value of header ${name} holds a line break or NUL` };
    if (DROPPED_HEADERS.has(name) || DROPPED_PREFIXES.some((prefix) => name.startsWith(prefix))) {
      dropped.push(name);
      continue;
    }
    headers.set(name, value);
  }
  if (!headers.has("user-agent")) headers.set("user-agent", USER_AGENT);
  return { ok: true, headers, dropped };
}

function notesFor(hops: readonly string[], finalUrl: string, dropped: readonly string[]): string[] {
  const notes: string[] = [];
  if (hops.length > 0) notes.push(`followed ${hops.length} redirect${hops.length === 1 ? "" : "s"}; final URL ${finalUrl}`);
  if (dropped.length > 0) notes.push(`request headers not sent: ${dropped.join(", ")}`);
  return notes;
}

async function describeResponse(response: Response, maxBytes: number, signal: AbortSignal, notes: string[]): Promise<string> {
  const contentType = response.headers.get("content-type") ?? "";
  const head = `HTTP ${response.status} ${contentType === "" ? "(no content-type)" : contentType}`;
  if (contentType !== "" && !isTextual(contentType)) {
    discardBody(response);
    const length = response.headers.get("content-length");
    notes.unshift(`binary content (${contentType}${length === null ? "" : `, ${length} bytes`}) not shown: http_fetch returns text only`);
    return `${head}\n\n${notes.map((note) => `[${note}]`).join("\n")}`;
  }
  const read = await readCappedBody(response, maxBytes, signal);
  if (contentType === "" && read.bytes.includes(0)) {
    notes.unshift("binary content (no content-type, NUL bytes in the body) not shown: http_fetch returns text only");
    return `${head}\n\n${notes.map((note) => `[${note}]`).join("\n")}`;
  }
  if (read.truncated) notes.push(`truncated: the body is longer than ${maxBytes} bytes; only the first ${maxBytes} are shown`);
  const text = decode(read.bytes, contentType);
  return `${head}\n\n${text}${notes.length === 0 ? "" : `\n\n${notes.map((note) => `[${note}]`).join("\n")}`}`;
}

/** Text types by MIME essence: text/*, JSON and XML (also +json / +xml), scripts, forms, YAML, TOML, CSV. */
function isTextual(contentType: string): boolean {
  const essence = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  return essence.startsWith("text/") || /\+(json|xml)$/.test(essence) || TEXT_TYPES.has(essence);
}

const TEXT_TYPES: ReadonlySet<string> = new Set([
  "application/json",
  "application/xml",
  "application/javascript",
  "application/ecmascript",
  "application/x-javascript",
  "application/x-www-form-urlencoded",
  "application/ndjson",
  "application/x-ndjson",
  "application/jsonl",
  "application/yaml",
  "application/x-yaml",
  "application/toml",
  "application/csv",
  "application/graphql",
  "application/sql",
]);

function decode(bytes: Uint8Array, contentType: string): string {
  const charset = /;\s*charset="?([^";\s]+)"?/i.exec(contentType)?.[1];
  try {
    return new TextDecoder(charset ?? "utf-8").decode(bytes);
  } catch {
    // An unknown or unsupported charset label: UTF-8 is the web's default and usually right.
    return new TextDecoder("utf-8").decode(bytes);
  }
}

export interface CappedBody {
  bytes: Uint8Array;
  /** The body was longer than the cap: `bytes` is its first `maxBytes`, the rest was cancelled. */
  truncated: boolean;
}

/**
 * Reads at most `maxBytes` of the body through its stream reader and cancels the rest unread, so a
 * huge or endless body costs no more than the cap. Rejects with the signal's reason once `signal`
 * aborts (the read is cancelled), whether or not the body's source honours the signal.
 */
export async function readCappedBody(response: Response, maxBytes: number, signal: AbortSignal): Promise<CappedBody> {
  if (response.body === null) return { bytes: new Uint8Array(0), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let truncated = false;
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await untilAborted(reader.read(), signal);
      if (done) {
        finished = true;
        break;
      }
      const room = maxBytes - total;
      if (value.byteLength > room) {
        chunks.push(value.subarray(0, room));
        total += room;
        truncated = true;
        break;
      }
      chunks.push(value);
      total += value.byteLength;
    }
  } finally {
    if (!finished) reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { bytes, truncated };
}

/** Settles as `promise` does, or rejects with the signal's reason as soon as it aborts. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * A Worker has a few connections in flight at once (six in production); one whose body is never
 * read holds its slot, and the runtime cancels the oldest such response ("A stalled HTTP response
 * was canceled to prevent deadlock … call response.body.cancel()"). So drop unread bodies at once.
 */
export function discardBody(response: Response): void {
  response.body?.cancel().catch(() => {});
}

function fail(content: string): ToolResult {
  return { ok: false, content };
}

function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
