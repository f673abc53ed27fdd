// Tests fault injection over real loopback HTTP: every kind, forced/scripted/rated, per-key RPM/TPM, hangs and aborts.

import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { KEY, chat, eventually, readAll, sseData, userBody, useMockModel } from "./test-helpers.ts";
import { startMockModel } from "./server.ts";
import type { FaultKind, MockModelHandle } from "./server.ts";

const { mock, client } = await useMockModel();

const streamBody = (content = "hello"): Record<string, unknown> => userBody(content, { stream: true, stream_options: { include_usage: true } });

describe("HTTP error faults (forced with x-mock-fault)", () => {
  const cases: Array<[FaultKind, number, string, string | null]> = [
    ["429", 429, "requests", "rate_limit_exceeded"],
    ["insufficient_quota", 429, "insufficient_quota", "insufficient_quota"],
    ["500", 500, "server_error", null],
    ["502", 502, "server_error", null],
    ["503", 503, "server_error", null],
    ["400", 400, "invalid_request_error", null],
    ["401", 401, "invalid_request_error", "invalid_api_key"],
    ["404", 404, "invalid_request_error", "model_not_found"],
    ["context_length", 400, "invalid_request_error", "context_length_exceeded"],
  ];
  it.each(cases)("%s → HTTP %i in the OpenAI error shape (stream and not)", async (kind, status, type, code) => {
    for (const body of [userBody("x"), streamBody("x")]) {
      const res = await chat(mock, { body, headers: { "x-mock-fault": kind } });
      expect(res.status).toBe(status);
      expect(res.headers.get("x-mock-model")).toBe("true");
      expect(res.headers.get("x-mock-fault-injected")).toBe(kind);
      expect(res.headers.get("content-type")).toBe("application/json");
      const err = (await res.json()) as { error: Record<string, unknown> };
      expect(err.error).toMatchObject({ type, code });
      expect(typeof err.error.message).toBe("string");
      if (kind === "429") {
        expect(res.headers.get("retry-after")).toBe("1");
        expect(res.headers.get("retry-after-ms")).toBe("1000");
      }
    }
    const s = mock.stats();
    expect(s.faults_injected).toEqual({ [kind]: 2 });
    expect(s.by_status).toEqual({ [String(status)]: 2 });
    expect(s).toMatchObject({ total_tokens: 0, completed: 0, in_flight: 0 });
  });

  it("retry_after_s sets retry-after (rounded up) and retry-after-ms; the SDK sees a RateLimitError", async () => {
    mock.setScenario({ retry_after_s: 2.5 });
    const res = await chat(mock, { headers: { "x-mock-fault": "429" } });
    expect(res.headers.get("retry-after")).toBe("3");
    expect(res.headers.get("retry-after-ms")).toBe("2500");
    await res.arrayBuffer();
    mock.setScenario({ script: ["429"] });
    await expect(client.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "x" }] })).rejects.toBeInstanceOf(OpenAI.RateLimitError);
  });
});

describe("fault selection", () => {
  it("script steps are consumed in order, then rates (off) apply; x-mock-fault: ok bypasses the script", async () => {
    mock.setScenario({ script: ["429", "500", "ok", "503"] });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await chat(mock, i === 1 ? { headers: { "x-mock-fault": "ok" } } : {});
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    expect(statuses).toEqual([429, 200, 500, 200, 503]);
    expect(mock.getScenario().script).toEqual([]);
    const last = await chat(mock);
    expect(last.status).toBe(200);
    await last.arrayBuffer();
  });

  it("rates are seeded: the same seed gives the same fault sequence", async () => {
    const run = async (seed: number): Promise<number[]> => {
      mock.setScenario({ seed, rates: { "500": 0.3, "503": 0.2 } });
      const out: number[] = [];
      for (let i = 0; i < 30; i++) {
        const res = await chat(mock);
        out.push(res.status);
        await res.arrayBuffer();
      }
      return out;
    };
    const a = await run(7);
    const b = await run(7);
    expect(a).toEqual(b);
    const faults = a.filter((s) => s !== 200).length;
    expect(faults).toBeGreaterThan(0);
    expect(faults).toBeLessThan(30);
    expect(a.every((s) => [200, 500, 503].includes(s))).toBe(true);
  });
});

describe("body faults", () => {
  it("malformed: 200 with a non-JSON body; stream has a broken data line; the SDK rejects both", async () => {
    const res = await chat(mock, { headers: { "x-mock-fault": "malformed" } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(() => JSON.parse(text)).toThrow();

    const sres = await chat(mock, { body: streamBody(), headers: { "x-mock-fault": "malformed" } });
    const data = sseData(await sres.text());
    expect(data.some((d) => d !== "[DONE]" && !isJson(d))).toBe(true);

    mock.setScenario({ script: ["malformed", "malformed"] });
    await expect(client.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "x" }] })).rejects.toThrow();
    await expect(consume(client, true)).rejects.toThrow();
    const s = mock.stats();
    expect(s).toMatchObject({ faults_injected: { malformed: 4 }, by_status: { "200": 4 }, total_tokens: 0, completed: 0 });
  });

  it("truncated: the stream stops without [DONE] or usage and the socket closes; non-stream body is cut", async () => {
    const sres = await chat(mock, { body: streamBody(), headers: { "x-mock-fault": "truncated" } });
    expect(sres.status).toBe(200);
    const got = await readAll(sres);
    const data = sseData(got.text);
    expect(data.length).toBeGreaterThan(0);
    expect(data).not.toContain("[DONE]");
    expect(got.text).not.toContain('"usage"');

    const res = await chat(mock, { headers: { "x-mock-fault": "truncated" } });
    expect(res.status).toBe(200);
    const body = await readAll(res);
    expect(body.errored).toBe(true);

    mock.setScenario({ script: ["truncated"] });
    await expect(consume(client, true)).rejects.toThrow();
    await eventually(() => mock.stats().in_flight === 0);
    expect(mock.stats()).toMatchObject({ faults_injected: { truncated: 3 }, total_tokens: 0, completed: 0, aborted: 0 });
  });

  it("no_usage: a normal answer with no usage anywhere, and no tokens counted", async () => {
    const res = await chat(mock, { headers: { "x-mock-fault": "no_usage" } });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).not.toHaveProperty("usage");
    expect(body).toMatchObject({ object: "chat.completion", choices: [{ finish_reason: "stop" }] });

    const sres = await chat(mock, { body: streamBody(), headers: { "x-mock-fault": "no_usage" } });
    const text = await sres.text();
    expect(sseData(text).at(-1)).toBe("[DONE]");
    expect(text).not.toContain('"usage"');
    expect(mock.stats()).toMatchObject({ faults_injected: { no_usage: 2 }, completed: 2, total_tokens: 0 });
  });
});

describe("hang", () => {
  it("never answers until the client gives up; then in_flight drops and nothing leaks", async () => {
    await expect(chat(mock, { headers: { "x-mock-fault": "hang" }, signal: AbortSignal.timeout(1000) })).rejects.toThrow();

    // Streaming: headers arrive, then nothing.
    const ac = new AbortController();
    const sres = await chat(mock, { body: streamBody(), headers: { "x-mock-fault": "hang" }, signal: ac.signal });
    expect(sres.status).toBe(200);
    const reading = readAll(sres);
    await new Promise((r) => setTimeout(r, 200));
    ac.abort();
    expect((await reading).text).toBe("");

    // The SDK's own timeout.
    mock.setScenario({ script: ["hang"] });
    const impatient = new OpenAI({ apiKey: KEY, baseURL: `${mock.url}/v1`, maxRetries: 0, timeout: 1000 });
    await expect(impatient.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "x" }] })).rejects.toBeInstanceOf(
      OpenAI.APIConnectionTimeoutError,
    );

    await eventually(() => mock.stats().in_flight === 0);
    expect(mock.stats()).toMatchObject({ faults_injected: { hang: 3 }, aborted: 3, completed: 0 });
  });

  it("a hanging stream sends its headers after the ttfb, then nothing", async () => {
    const ac = new AbortController();
    const t0 = performance.now();
    const res = await chat(mock, { body: streamBody(), headers: { "x-mock-fault": "hang", "x-mock-ttfb-ms": "300" }, signal: ac.signal });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(285);
    expect(res.status).toBe(200);
    expect(mock.stats()).toMatchObject({ in_flight: 1, waiting_for_headers: 0 });
    const reading = readAll(res);
    await new Promise((r) => setTimeout(r, 200));
    ac.abort();
    expect((await reading).text).toBe("");
    await eventually(() => mock.stats().in_flight === 0);
  });

  it("close() does not wait for hung requests", async () => {
    const other = await startMockModel({ script: ["hang"] });
    const pending = chat(other).catch(() => "closed");
    await eventually(() => other.stats().in_flight === 1);
    await other.close();
    expect(await pending).toBe("closed");
  });
});

describe("rpm_per_key", () => {
  it("limits each API key separately with retry-after and the OpenAI rate-limit body", async () => {
    mock.setScenario({ rpm_per_key: 2 });
    const remaining: Array<string | null> = [];
    for (let i = 0; i < 2; i++) {
      const ok = await chat(mock);
      expect(ok.status).toBe(200);
      remaining.push(ok.headers.get("x-ratelimit-remaining-requests"));
      await ok.arrayBuffer();
    }
    expect(remaining).toEqual(["1", "0"]);
    const limited = await chat(mock);
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get("retry-after"));
    const retryAfterMs = Number(limited.headers.get("retry-after-ms"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(60_000);
    const err = (await limited.json()) as { error: { message: string; type: string; code: string } };
    expect(err.error).toMatchObject({ type: "requests", code: "rate_limit_exceeded" });
    expect(err.error.message).toMatch(/^Rate limit reached/);

    const otherKey = await chat(mock, { headers: { authorization: "Bearer another-key" } });
    expect(otherKey.status).toBe(200);
    await otherKey.arrayBuffer();
    expect(mock.stats()).toMatchObject({ faults_injected: { rpm_per_key: 1 }, by_status: { "200": 3, "429": 1 } });
  });
});

describe("tpm_per_key", () => {
  // prompt "hello" = 2 + 4 = 6 tokens; x-mock-output-tokens fixes the completion.
  const call = (
    m: MockModelHandle,
    maxTokens: number | undefined,
    opts: { out?: number; key?: string; headers?: Record<string, string>; stream?: boolean } = {},
  ): Promise<Response> =>
    chat(m, {
      body: userBody("hello", {
        ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
        ...(opts.stream === true ? { stream: true, stream_options: { include_usage: true } } : {}),
      }),
      headers: { "x-mock-output-tokens": String(opts.out ?? 10), ...(opts.key !== undefined ? { authorization: `Bearer ${opts.key}` } : {}), ...opts.headers },
    });

  it("reserves prompt + max_tokens, charges the actual total, answers 429 with retry-after, and slides", async () => {
    let now = 0;
    const m = await startMockModel({ tpm_per_key: 100, clock: () => now });
    try {
      // 6 + 50 reserved → 44 left; once answered, the charge is 6 + 10 = 16.
      const a = await call(m, 50);
      expect(a.status).toBe(200);
      expect(a.headers.get("x-ratelimit-limit-tokens")).toBe("100");
      expect(a.headers.get("x-ratelimit-remaining-tokens")).toBe("44");
      expect(((await a.json()) as { usage: { total_tokens: number } }).usage.total_tokens).toBe(16);
      now = 1_000;
      const b = await call(m, 50, { stream: true });
      expect(b.headers.get("x-ratelimit-remaining-tokens")).toBe("28"); // 100 − 16 − 56
      await b.text();
      now = 2_000;
      // 32 used + 6 + 80 > 100: freeing the 16 at 0 s is not enough; the one at 1 s is → 59 s.
      const c = await call(m, 80);
      expect(c.status).toBe(429);
      expect(c.headers.get("retry-after")).toBe("59");
      expect(c.headers.get("retry-after-ms")).toBe("59000");
      expect(c.headers.get("x-ratelimit-remaining-tokens")).toBe("68");
      const err = (await c.json()) as { error: { message: string; type: string; code: string } };
      expect(err.error).toMatchObject({ type: "tokens", code: "rate_limit_exceeded" });
      expect(err.error.message).toMatch(/^Rate limit reached for mock-1 on tokens per min \(TPM\): Limit 100, Used 32, Requested 86\./);
      // Another key has its own window.
      const other = await call(m, 80, { key: "another-key" });
      expect(other.status).toBe(200);
      await other.arrayBuffer();
      // 60.5 s: the request at 0 s left the window, the one at 1 s not yet → retry in 500 ms.
      now = 60_500;
      const d = await call(m, 80);
      expect(d.status).toBe(429);
      expect([d.headers.get("retry-after"), d.headers.get("retry-after-ms")]).toEqual(["1", "500"]);
      await d.arrayBuffer();
      now = 61_001;
      const e = await call(m, 80);
      expect(e.status).toBe(200);
      expect(e.headers.get("x-ratelimit-remaining-tokens")).toBe("14");
      await e.arrayBuffer();
      expect(m.stats()).toMatchObject({ faults_injected: { tpm_per_key: 2 }, by_status: { "200": 4, "429": 2 } });
    } finally {
      await m.close();
    }
  });

  it("without max_tokens the answer's own completion is reserved; too large a request is refused without retry-after", async () => {
    const now = 0;
    const m = await startMockModel({ tpm_per_key: 100, clock: () => now });
    try {
      const a = await call(m, undefined, { out: 30 });
      expect(a.headers.get("x-ratelimit-remaining-tokens")).toBe("64"); // 100 − (6 + 30)
      await a.arrayBuffer();
      const big = await call(m, 95);
      expect(big.status).toBe(429);
      expect(big.headers.get("retry-after")).toBeNull();
      const err = (await big.json()) as { error: { message: string; type: string; code: string } };
      expect(err.error).toMatchObject({ type: "tokens", code: "rate_limit_exceeded" });
      expect(err.error.message).toMatch(/^Request too large for mock-1 on tokens per min \(TPM\): Limit 100, Requested 101\./);
      // x-mock-fault bypasses the limits (as for rpm_per_key).
      const forced = await call(m, 95, { headers: { "x-mock-fault": "ok" } });
      expect(forced.status).toBe(200);
      await forced.arrayBuffer();
      expect(m.stats().faults_injected).toEqual({ tpm_per_key: 1 });
    } finally {
      await m.close();
    }
  });

  it("requests that end without an answer (error faults, hangs) are refunded; a TPM rejection does not count against RPM", async () => {
    const m = await startMockModel({ tpm_per_key: 100, rpm_per_key: 3, script: ["500", "hang"], clock: () => 0 });
    try {
      const failed = await call(m, 90);
      expect(failed.status).toBe(500);
      expect(failed.headers.get("x-ratelimit-remaining-tokens")).toBe("4");
      await failed.arrayBuffer();
      const ac = new AbortController();
      const hung = chat(m, { body: userBody("hello", { max_tokens: 90 }), signal: ac.signal }).catch(() => "aborted");
      await eventually(() => m.stats().in_flight === 1);
      const busy = await call(m, 90);
      expect(busy.status).toBe(429); // the hung request still holds its reservation
      expect(((await busy.json()) as { error: { type: string } }).error.type).toBe("tokens");
      ac.abort();
      expect(await hung).toBe("aborted");
      await eventually(() => m.stats().in_flight === 0);
      // Both the 500 and the hang were refunded to 0; this is the 3rd request of the minute for RPM.
      const ok = await call(m, 90);
      expect(ok.status).toBe(200);
      expect(ok.headers.get("x-ratelimit-remaining-tokens")).toBe("4");
      expect(ok.headers.get("x-ratelimit-remaining-requests")).toBe("0");
      await ok.arrayBuffer();
      const rpmLimited = await call(m, 1);
      expect(rpmLimited.status).toBe(429);
      expect(((await rpmLimited.json()) as { error: { type: string } }).error.type).toBe("requests");
      expect(m.stats().faults_injected).toMatchObject({ tpm_per_key: 1, rpm_per_key: 1 });
    } finally {
      await m.close();
    }
  });
});

describe("streaming with chunk_delay_ms", () => {
  it("spaces chunks out, and an abort mid-stream cleans up", async () => {
    mock.setScenario({ chunk_delay_ms: 40 });
    const t0 = performance.now();
    const res = await chat(mock, { body: streamBody() });
    const data = sseData(await res.text());
    expect(data.at(-1)).toBe("[DONE]");
    expect(performance.now() - t0).toBeGreaterThanOrEqual(40 * 3);

    mock.setScenario({ chunk_delay_ms: 10_000 });
    const ac = new AbortController();
    const sres = await chat(mock, { body: streamBody(), signal: ac.signal });
    const reader = sres.body?.getReader();
    await reader?.read(); // the first chunk arrives, the rest is 10 s apart
    ac.abort();
    await eventually(() => mock.stats().in_flight === 0);
    expect(mock.stats()).toMatchObject({ aborted: 1, completed: 1 });
  });
});

function isJson(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

async function consume(c: OpenAI, stream: true): Promise<string> {
  const s = await c.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "x" }], stream, stream_options: { include_usage: true } });
  let out = "";
  for await (const chunk of s) out += chunk.choices[0]?.delta.content ?? "";
  return out;
}
