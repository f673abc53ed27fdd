import { describe, expect, it } from "vitest";
import type { ErrorClass } from "./error-class.ts";
import { classifyUpstreamError, parseRetryAfterMs, redactSecrets, type UpstreamFailure } from "./upstream-error.ts";

const openaiError = (message: string, type: string | null, code: string | null) => ({ error: { message, type, code, param: null } });

describe("classifyUpstreamError: class and retryability", () => {
  it.each<[string, UpstreamFailure, ErrorClass, boolean]>([
    ["timeout", { kind: "timeout" }, "upstream_timeout", true],
    ["connection", { kind: "connection", message: "ECONNRESET" }, "upstream_connection", true],
    ["malformed", { kind: "malformed" }, "malformed_response", true],
    ["truncated", { kind: "truncated" }, "truncated_stream", true],
    ["408", { kind: "http", status: 408 }, "upstream_error", true],
    ["409", { kind: "http", status: 409 }, "upstream_error", true],
    [
      "429 rate limit",
      { kind: "http", status: 429, body: openaiError("Rate limit reached for requests", "requests", "rate_limit_exceeded") },
      "rate_limited",
      true,
    ],
    [
      "429 insufficient_quota (code)",
      { kind: "http", status: 429, body: openaiError("You exceeded your current quota", "insufficient_quota", "insufficient_quota") },
      "quota_exceeded",
      false,
    ],
    ["429 insufficient_quota (type only)", { kind: "http", status: 429, body: openaiError("quota", "insufficient_quota", null) }, "quota_exceeded", false],
    ["429 no body", { kind: "http", status: 429 }, "rate_limited", true],
    ["500", { kind: "http", status: 500 }, "upstream_error", true],
    ["502 html", { kind: "http", status: 502, body: "<html><head><title>502 Bad Gateway</title></head></html>" }, "upstream_error", true],
    ["503", { kind: "http", status: 503 }, "upstream_error", true],
    [
      "529 (Anthropic overloaded)",
      { kind: "http", status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } },
      "upstream_error",
      true,
    ],
    ["400", { kind: "http", status: 400, body: openaiError("Invalid value for 'temperature'", "invalid_request_error", null) }, "bad_request", false],
    [
      "400 context code",
      { kind: "http", status: 400, body: openaiError("too long", "invalid_request_error", "context_length_exceeded") },
      "context_length",
      false,
    ],
    [
      "400 context message (OpenAI)",
      { kind: "http", status: 400, body: openaiError("This model's maximum context length is 128000 tokens.", "invalid_request_error", null) },
      "context_length",
      false,
    ],
    [
      "400 context message (vLLM)",
      {
        kind: "http",
        status: 400,
        body: { object: "error", message: "This model's max context length is 4096, but you requested 5000 tokens", type: "BadRequestError", code: 400 },
      },
      "context_length",
      false,
    ],
    ["400 too many tokens", { kind: "http", status: 400, body: "prompt has too many tokens" }, "context_length", false],
    [
      "400 context window",
      { kind: "http", status: 400, body: [{ error: { code: 400, message: "input exceeds the context window", status: "INVALID_ARGUMENT" } }] },
      "context_length",
      false,
    ],
    ["401", { kind: "http", status: 401 }, "auth", false],
    ["403", { kind: "http", status: 403 }, "auth", false],
    ["404", { kind: "http", status: 404 }, "not_found", false],
    ["422", { kind: "http", status: 422 }, "bad_request", false],
    ["413", { kind: "http", status: 413 }, "bad_request", false],
    ["402", { kind: "http", status: 402 }, "bad_request", false],
  ])("%s", (_name, failure, cls, retryable) => {
    const c = classifyUpstreamError(failure);
    expect([c.class, c.retryable]).toEqual([cls, retryable]);
  });
});

describe("classifyUpstreamError: message", () => {
  it.each<[UpstreamFailure, string]>([
    [
      { kind: "http", status: 429, body: openaiError("Rate limit reached for requests", "requests", "rate_limit_exceeded") },
      "429 Too Many Requests: Rate limit reached for requests",
    ],
    [{ kind: "http", status: 500 }, "500 Internal Server Error"],
    [{ kind: "http", status: 502, body: "<html><head><title>502 Bad Gateway</title></head><body>…</body></html>" }, "502 Bad Gateway: 502 Bad Gateway"],
    [{ kind: "http", status: 418, body: "  I'm a\n teapot " }, "418: I'm a teapot"],
    [{ kind: "http", status: 404, body: { error: "model not found" } }, "404 Not Found: model not found"],
    [{ kind: "http", status: 400, body: { message: "bad thing" } }, "400 Bad Request: bad thing"],
    [
      {
        kind: "http",
        status: 401,
        body: openaiError("Incorrect API key provided: sk-proj-abc123XYZ456. You can find your API key at …", "invalid_request_error", "invalid_api_key"),
      },
      "401 Unauthorized: Incorrect API key provided: [redacted]. You can find your API key at …",
    ],
    [{ kind: "timeout" }, "upstream request timed out"],
    [{ kind: "timeout", message: "no response within 60 s" }, "no response within 60 s"],
    [
      { kind: "connection", message: "connect to https://api.example.com/v1?key=AIzaSyA1234567890abcdefghij failed" },
      "connect to https://api.example.com/v1?key=[redacted] failed",
    ],
    [{ kind: "malformed" }, "upstream response could not be parsed"],
    [{ kind: "truncated" }, "upstream stream ended before it finished"],
  ])("%j → %s", (failure, message) => {
    expect(classifyUpstreamError(failure).message).toBe(message);
  });

  it("cuts long messages to 300 characters", () => {
    const m = classifyUpstreamError({ kind: "http", status: 400, body: openaiError("x".repeat(5_000), null, null) }).message;
    expect(m.length).toBe(300);
    expect(m.startsWith("400 Bad Request: xxx")).toBe(true);
  });

  it("never leaks a key that sits past the cut", () => {
    const m = classifyUpstreamError({ kind: "http", status: 401, body: `${"y".repeat(280)} sk-abcdefghijklmnopqrstuvwxyz0123456789` }).message;
    expect(m).not.toMatch(/sk-[a-z]/);
  });
});

describe("classifyUpstreamError: retryAfterMs", () => {
  it.each<[UpstreamFailure, number | undefined, number | null]>([
    [{ kind: "http", status: 429, headers: { "retry-after-ms": "1500" } }, undefined, 1_500],
    [{ kind: "http", status: 429, headers: { "retry-after": "2" } }, undefined, 2_000],
    [{ kind: "http", status: 503, headers: { "retry-after": "Wed, 21 Oct 2015 07:28:10 GMT" } }, Date.UTC(2015, 9, 21, 7, 28, 0), 10_000],
    // an HTTP date needs `now`; without it the header is ignored
    [{ kind: "http", status: 503, headers: { "retry-after": "Wed, 21 Oct 2015 07:28:10 GMT" } }, undefined, null],
    [{ kind: "http", status: 429 }, undefined, null],
    [{ kind: "timeout" }, 0, null],
  ])("%j (now %s) → %s", (failure, now, expected) => {
    expect(classifyUpstreamError(failure, now).retryAfterMs).toBe(expected);
  });
});

describe("parseRetryAfterMs", () => {
  const now = Date.UTC(2015, 9, 21, 7, 28, 0);
  it.each<[Record<string, string> | undefined, number | null]>([
    [undefined, null],
    [{}, null],
    [{ "retry-after-ms": "250.5" }, 250.5],
    [{ "retry-after-ms": "100", "retry-after": "30" }, 100], // -ms wins
    [{ "retry-after-ms": "soon", "retry-after": "3" }, 3_000], // garbage -ms falls back
    [{ "retry-after": "0" }, 0],
    [{ "retry-after": "1.5" }, 1_500],
    [{ "retry-after": " 7 " }, 7_000],
    [{ "retry-after": "-5" }, null],
    [{ "retry-after-ms": "-5" }, null],
    [{ "retry-after": "soon" }, null],
    [{ "retry-after": "1e3" }, null],
    [{ "retry-after": "" }, null],
    [{ "retry-after": "Wed, 21 Oct 2015 07:28:10 GMT" }, 10_000], // IMF-fixdate
    [{ "retry-after": "Wednesday, 21-Oct-15 07:29:00 GMT" }, 60_000], // RFC 850
    [{ "retry-after": "Wed Oct 21 07:28:05 2015" }, 5_000], // asctime
    [{ "retry-after": "Wed, 21 Oct 2015 07:27:00 GMT" }, 0], // in the past: retry now
    [{ "retry-after": "Wed, 21 Foo 2015 07:28:10 GMT" }, null],
    [{ "Retry-After": "4" }, 4_000], // tolerated even if a caller forgot to lower-case
  ])("%j → %s", (headers, expected) => {
    expect(parseRetryAfterMs(headers, now)).toBe(expected);
  });
});

describe("redactSecrets", () => {
  it.each([
    ["Incorrect API key provided: sk-proj-AbC123_xyz-789", "Incorrect API key provided: [redacted]"],
    ["key sk-ant-api03-abcdEFGH1234 was rejected", "key [redacted] was rejected"],
    ["masked sk-proj-********************abcd.", "masked [redacted]."],
    ["Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def", "Authorization: Bearer [redacted]"],
    ["bearer abc123", "bearer [redacted]"],
    ["GET /v1beta/models?key=AIzaSyD-abcdefghijklmnopqrstu&alt=sse", "GET /v1beta/models?key=[redacted]&alt=sse"],
    ["api_key=abc123 and apikey=def", "api_key=[redacted] and apikey=[redacted]"],
    ['{"api_key": "secret-value"}', '{"api_key": "[redacted]"}'],
    ["x-api-key: abcdef", "x-api-key: [redacted]"],
    ["token=abc password=hunter2", "token=[redacted] password=[redacted]"],
    // nothing secret: unchanged
    ["Rate limit reached for requests", "Rate limit reached for requests"],
    ["task-1 is at risk-free level; monkey=3; max_tokens=100", "task-1 is at risk-free level; monkey=3; max_tokens=100"],
    ["This model's maximum context length is 8192 tokens", "This model's maximum context length is 8192 tokens"],
  ])("%s → %s", (input, expected) => {
    expect(redactSecrets(input)).toBe(expected);
  });
});
