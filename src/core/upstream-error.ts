// Classifies a failed upstream model call once, into an ErrorClass with a short, secret-free
// message and the upstream's Retry-After. No I/O; the current time is passed in.
import type { ClassifiedError, ErrorClass } from "./error-class.ts";
import { isRecord } from "./is-record.ts";

export interface UpstreamFailure {
  kind: "http" | "timeout" | "connection" | "malformed" | "truncated";
  status?: number;
  /** Response headers, keys lower-cased. */
  headers?: Record<string, string>;
  /** The parsed JSON error body (e.g. `{ error: { message, type, code } }`) or the raw text. */
  body?: unknown;
  /** Our own description of the failure (e.g. the exception message of a timeout). */
  message?: string;
}

export const MAX_ERROR_MESSAGE_CHARS = 300;

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  529: "Overloaded",
};

const DEFAULT_MESSAGES: Readonly<Record<Exclude<UpstreamFailure["kind"], "http">, string>> = {
  timeout: "upstream request timed out",
  connection: "could not connect to upstream",
  malformed: "upstream response could not be parsed",
  truncated: "upstream stream ended before it finished",
};

const CONTEXT_LENGTH_MESSAGE = /context length|maximum context|too many tokens|context window/i;

/**
 * Classifies one upstream failure:
 * timeout → upstream_timeout, connection → upstream_connection, malformed → malformed_response,
 * truncated → truncated_stream (all retryable); HTTP 408/409/5xx → upstream_error (retryable);
 * 429 → rate_limited (retryable) unless the body says `insufficient_quota` → quota_exceeded;
 * 400 → bad_request, or context_length for a context-length error; 401/403 → auth;
 * 404 → not_found; any other 4xx → bad_request (all permanent).
 *
 * `now` (epoch ms) is only needed to read a Retry-After given as an HTTP date; without it such a
 * header is ignored.
 */
export function classifyUpstreamError(failure: UpstreamFailure, now?: number): ClassifiedError {
  const retryAfterMs = now === undefined ? parseRetryAfterDelta(failure.headers) : parseRetryAfterMs(failure.headers, now);
  if (failure.kind !== "http") {
    const cls: ErrorClass =
      failure.kind === "timeout"
        ? "upstream_timeout"
        : failure.kind === "connection"
          ? "upstream_connection"
          : failure.kind === "malformed"
            ? "malformed_response"
            : "truncated_stream";
    const detail = failure.message ?? upstreamMessage(failure.body) ?? DEFAULT_MESSAGES[failure.kind];
    return { class: cls, retryable: true, retryAfterMs, message: cleanMessage(detail) };
  }

  const status = failure.status;
  const detail = upstreamMessage(failure.body) ?? failure.message ?? null;
  const head = status === undefined ? "HTTP error" : `${status}${STATUS_TEXT[status] ? ` ${STATUS_TEXT[status]}` : ""}`;
  const message = cleanMessage(detail === null || detail.length === 0 ? head : `${head}: ${detail}`);
  const result = (cls: ErrorClass, retryable: boolean): ClassifiedError => ({ class: cls, retryable, retryAfterMs, message });

  if (status === undefined || !Number.isInteger(status)) return result("upstream_error", true);
  if (status === 429) {
    return hasErrorTag(failure.body, "insufficient_quota") ? result("quota_exceeded", false) : result("rate_limited", true);
  }
  if (status === 408 || status === 409 || status >= 500) return result("upstream_error", true);
  if (status === 400) {
    const isContextLength = hasErrorTag(failure.body, "context_length_exceeded") || (detail !== null && CONTEXT_LENGTH_MESSAGE.test(detail));
    return result(isContextLength ? "context_length" : "bad_request", false);
  }
  if (status === 401 || status === 403) return result("auth", false);
  if (status === 404) return result("not_found", false);
  if (status >= 400) return result("bad_request", false);
  // A 1xx–3xx reported as a failure: nothing says it is permanent.
  return result("upstream_error", true);
}

/**
 * The delay the upstream asked for, in ms: `retry-after-ms` (float ms) first, then `retry-after`
 * as seconds (float) or as an HTTP date (relative to `now`, epoch ms; a date in the past gives 0).
 * Missing, negative or unparseable values give null.
 */
export function parseRetryAfterMs(headers: Record<string, string> | undefined, now: number): number | null {
  const delta = parseRetryAfterDelta(headers);
  if (delta !== null) return delta;
  const value = header(headers, "retry-after");
  if (value === undefined || !Number.isFinite(now)) return null;
  const at = parseHttpDate(value);
  return at === null ? null : Math.max(0, at - now);
}

/** The numeric forms of Retry-After only (they need no clock). */
function parseRetryAfterDelta(headers: Record<string, string> | undefined): number | null {
  const ms = parseNonNegativeNumber(header(headers, "retry-after-ms"));
  if (ms !== null) return ms;
  const seconds = parseNonNegativeNumber(header(headers, "retry-after"));
  return seconds === null ? null : seconds * 1_000;
}

function header(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (headers === undefined) return undefined;
  if (Object.hasOwn(headers, name)) return headers[name];
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

function parseNonNegativeNumber(text: string | undefined): number | null {
  if (text === undefined) return null;
  const trimmed = text.trim();
  if (!/^\d+(\.\d+)?$|^\.\d+$/.test(trimmed)) return null;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : null;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/**
 * The three HTTP-date forms of RFC 9110 §5.6.7, parsed by hand so the result never depends on the
 * host's time zone: IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94
 * 08:49:37 GMT`, and asctime `Sun Nov  6 08:49:37 1994`.
 */
function parseHttpDate(text: string): number | null {
  const s = text.trim();
  let day: string, mon: string, year: string, hh: string, mm: string, ss: string;
  const imf = /^[a-z]{3}, (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/i.exec(s);
  const rfc850 = /^[a-z]+, (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/i.exec(s);
  const asctime = /^[a-z]{3} ([a-z]{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/i.exec(s);
  if (imf) {
    [, day = "", mon = "", year = "", hh = "", mm = "", ss = ""] = imf;
  } else if (rfc850) {
    [, day = "", mon = "", year = "", hh = "", mm = "", ss = ""] = rfc850;
    // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
    const yy = Number(year);
    year = String(yy < 70 ? 2000 + yy : 1900 + yy);
  } else if (asctime) {
    [, mon = "", day = "", hh = "", mm = "", ss = "", year = ""] = asctime;
  } else {
    return null;
  }
  const month = MONTHS.indexOf(mon.toLowerCase());
  const [d, h, m, sec] = [Number(day), Number(hh), Number(mm), Number(ss)];
  if (month === -1 || d < 1 || d > 31 || h > 23 || m > 59 || sec > 60) return null;
  const ms = Date.UTC(Number(year), month, d, h, m, sec);
  return Number.isFinite(ms) ? ms : null;
}

/** The error object of a body: `{ error: {...} }`, `[{ error: {...} }]` (Gemini), or the body itself. */
function errorObject(body: unknown): Record<string, unknown> | null {
  const root = Array.isArray(body) ? body[0] : body;
  if (!isRecord(root)) return null;
  return isRecord(root.error) ? root.error : root;
}

/** Whether the body's error `code`, `type` or `status` is `tag`. */
function hasErrorTag(body: unknown, tag: string): boolean {
  const e = errorObject(body);
  if (e === null) return false;
  return [e.code, e.type, e.status].some((v) => typeof v === "string" && v.toLowerCase() === tag);
}

/** The upstream's own message, if the body carries one. */
function upstreamMessage(body: unknown): string | null {
  if (typeof body === "string") {
    const trimmed = body.trim();
    if (trimmed.length === 0) return null;
    if (trimmed.startsWith("<")) {
      // An HTML error page (e.g. a proxy's 502): its title is the only useful part.
      const title = /<title[^>]*>([^<]*)<\/title>/i.exec(trimmed)?.[1]?.trim();
      return title !== undefined && title.length > 0 ? title : null;
    }
    return trimmed;
  }
  const root = Array.isArray(body) ? body[0] : body;
  if (!isRecord(root)) return null;
  if (typeof root.error === "string" && root.error.length > 0) return root.error;
  const e = errorObject(body);
  if (e !== null && typeof e.message === "string" && e.message.length > 0) return e.message;
  if (typeof root.message === "string" && root.message.length > 0) return root.message;
  return null;
}

function cleanMessage(text: string): string {
  const oneLine = redactSecrets(text).replace(/\s+/g, " ").trim();
  return oneLine.length <= MAX_ERROR_MESSAGE_CHARS ? oneLine : `${oneLine.slice(0, MAX_ERROR_MESSAGE_CHARS - 1)}…`;
}

const SECRET_PATTERNS: ReadonlyArray<[RegExp, string]> = [
  // OpenAI / Anthropic / DeepSeek / Moonshot style keys, including partly masked ones (`sk-proj-****abcd`).
  [/\bsk-[A-Za-z0-9_*-]{4,}/g, "[redacted]"],
  // Google API keys.
  [/\bAIza[0-9A-Za-z_-]{20,}/g, "[redacted]"],
  // Authorization headers.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=*-]+/gi, "$1 [redacted]"],
  // `key=…`, `api_key=…`, `x-api-key: …`, `"api_key": "…"`, `token=…`, `secret=…`, `password=…`.
  [
    /\b((?:x[-_])?(?:api[-_]?)?key|access[-_]?token|token|secret|password|authorization)("?\s*[:=]\s*"?)(?!\[redacted\]|Bearer\b|Basic\b)[^\s&"',;}]+/gi,
    "$1$2[redacted]",
  ],
];

/** Replaces API keys, bearer tokens and `key=…`-style secrets in `text` with `[redacted]`. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}
