// Webhook tools, with an injected fetch that records every request: what a receiver gets (a
// signed POST it can verify), and every way a call fails without surprising it.
import { describe, expect, it } from "vitest";
import { SIGNATURE_HEADER, verifyWebhook } from "../../../src/core/webhook-signature.ts";
import { runWebhook } from "./webhook-tool.ts";
import type { WebhookCall, WebhookSettings } from "./webhook-tool.ts";

interface Recorded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
  redirect: string | undefined;
}

function fakeFetch(answer: (request: Recorded) => Response | Promise<Response>) {
  const calls: Recorded[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const recorded: Recorded = {
      url: typeof input === "string" ? input : input instanceof URL ? input.href : input.url,
      method: init?.method ?? "GET",
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      body: typeof init?.body === "string" ? init.body : null,
      redirect: init?.redirect,
    };
    calls.push(recorded);
    return answer(recorded);
  };
  return { fetch, calls };
}

const SECRET = "whsec_agent_test";
const NOW_MS = 1_767_225_600_000;

const call: WebhookCall = {
  url: "https://hooks.example.com/tools/lookup",
  toolName: "lookup",
  arguments: { sku: "A-17", qty: 2, note: "naïve" },
  swarmId: "sw_abcdefghijklmnopqrst",
  taskId: "t-42",
  toolCallId: "call_9f8e",
};

function settings(fetch: typeof globalThis.fetch, overrides: Partial<WebhookSettings> = {}): WebhookSettings {
  return { secret: SECRET, allowPrivate: false, timeoutMs: 2_000, maxResponseBytes: 64 * 1024, fetch, now: () => NOW_MS, ...overrides };
}

describe("webhook tool: the request", () => {
  it("POSTs the arguments as JSON, signed so the receiver can verify them", async () => {
    const { fetch, calls } = fakeFetch(() => new Response('{"in_stock":true}', { headers: { "content-type": "application/json" } }));
    const result = await runWebhook(call, settings(fetch));
    expect(result).toEqual({ ok: true, content: '{"in_stock":true}' });
    expect(calls).toHaveLength(1);
    const request = calls[0];
    expect(request).toMatchObject({ url: "https://hooks.example.com/tools/lookup", method: "POST", redirect: "manual", body: JSON.stringify(call.arguments) });
    expect(request?.headers).toMatchObject({
      "content-type": "application/json",
      "x-edgeswarm-swarm-id": "sw_abcdefghijklmnopqrst",
      "x-edgeswarm-task-id": "t-42",
      "x-edgeswarm-tool": "lookup",
      "x-edgeswarm-tool-call-id": "call_9f8e",
    });
    const header = request?.headers[SIGNATURE_HEADER] ?? null;
    expect(header).toMatch(/^t=1767225600,v1=[0-9a-f]{64}$/);
    // What a receiver does: verify the raw body against the header, with its own clock.
    expect(await verifyWebhook(SECRET, request?.body ?? "", header, NOW_MS / 1_000 + 2)).toEqual({ ok: true });
    expect((await verifyWebhook("another-secret", request?.body ?? "", header, NOW_MS / 1_000)).ok).toBe(false);
  });

  it("sends the same tool call id when the call is re-run (an idempotency key), each time freshly signed", async () => {
    const { fetch, calls } = fakeFetch(() => new Response("done"));
    let now = NOW_MS;
    await runWebhook(call, settings(fetch, { now: () => now }));
    now += 90_000; // the task crashed and its retry re-runs the journaled tool call
    await runWebhook(call, settings(fetch, { now: () => now }));
    expect(calls.map((c) => c.headers["x-edgeswarm-tool-call-id"])).toEqual(["call_9f8e", "call_9f8e"]);
    expect(calls[0]?.body).toBe(calls[1]?.body);
    expect(await verifyWebhook(SECRET, calls[1]?.body ?? "", calls[1]?.headers[SIGNATURE_HEADER] ?? null, now / 1_000)).toEqual({ ok: true });
  });

  it("percent-encodes ids a header cannot carry as they are", async () => {
    const { fetch, calls } = fakeFetch(() => new Response("ok"));
    await runWebhook({ ...call, taskId: "tâche 1", toolCallId: "call\nx" }, settings(fetch));
    expect(calls[0]?.headers).toMatchObject({ "x-edgeswarm-task-id": "t%C3%A2che%201", "x-edgeswarm-tool-call-id": "call%0Ax" });
  });
});

describe("webhook tool: refusals", () => {
  it.each([
    ["no secret", null],
    ["an empty secret", ""],
  ])("refuses to call without a signing secret (%s)", async (_, secret) => {
    const { fetch, calls } = fakeFetch(() => new Response("never"));
    const result = await runWebhook(call, settings(fetch, { secret }));
    expect(result).toEqual({ ok: false, content: expect.stringContaining("the agent Worker has no WEBHOOK_SECRET") });
    expect(calls).toHaveLength(0);
  });

  it.each([
    ["plain http", "http://hooks.example.com/lookup", "must use https"],
    ["loopback", "https://127.0.0.1/hook", "host 127.0.0.1 is a loopback address (refused)"],
    ["a private address", "https://10.0.0.1/hook", "host 10.0.0.1 is a private address (refused)"],
    ["the metadata address", "https://169.254.169.254/latest/meta-data/", "host 169.254.169.254 is a link-local address (refused)"],
    ["IPv6 loopback", "https://[::1]/hook", "host [::1] is a loopback address (refused)"],
    ["decimal loopback", "https://2130706433/hook", "host 127.0.0.1 is a loopback address (refused)"],
  ])("refuses %s without requesting it", async (_, url, reason) => {
    const { fetch, calls } = fakeFetch(() => new Response("never"));
    const result = await runWebhook({ ...call, url }, settings(fetch));
    expect(result.ok).toBe(false);
    expect(result.content).toContain("webhook lookup refused: ");
    expect(result.content).toContain(reason);
    expect(calls).toHaveLength(0);
  });

  it("calls a local http webhook when private targets are allowed (local development)", async () => {
    const { fetch, calls } = fakeFetch(() => new Response("local"));
    const result = await runWebhook({ ...call, url: "http://127.0.0.1:8787/hook" }, settings(fetch, { allowPrivate: true }));
    expect(result).toEqual({ ok: true, content: "local" });
    expect(calls.map((c) => c.url)).toEqual(["http://127.0.0.1:8787/hook"]);
  });
});

describe("webhook tool: answers", () => {
  it("reports a redirect as an error and does not follow it", async () => {
    const { fetch, calls } = fakeFetch(() => new Response(null, { status: 302, headers: { location: "http://169.254.169.254/latest/" } }));
    const result = await runWebhook(call, settings(fetch));
    expect(result).toEqual({
      ok: false,
      content:
        "webhook lookup answered HTTP 302, a redirect to http://169.254.169.254/latest/; webhook calls do not follow redirects (the tool's url should be the final address)",
    });
    expect(calls).toHaveLength(1);
  });

  it("reports a non-2xx answer with the first 500 characters of its body", async () => {
    const body = `${"e".repeat(500)}${"f".repeat(1_500)}`;
    const { fetch } = fakeFetch(() => new Response(body, { status: 503 }));
    const result = await runWebhook(call, settings(fetch));
    expect(result).toEqual({ ok: false, content: `webhook lookup answered HTTP 503: ${"e".repeat(500)}…` });
  });

  it("reports a non-2xx answer without a body", async () => {
    const { fetch } = fakeFetch(() => new Response(null, { status: 401 }));
    expect(await runWebhook(call, settings(fetch))).toEqual({ ok: false, content: "webhook lookup answered HTTP 401 with an empty body" });
  });

  it("says so when a 2xx answer is empty", async () => {
    const { fetch } = fakeFetch(() => new Response(null, { status: 204 }));
    expect(await runWebhook(call, settings(fetch))).toEqual({ ok: true, content: "(webhook lookup answered HTTP 204 with an empty body)" });
  });

  it("reads at most maxResponseBytes of the answer, and says it cut it", async () => {
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode("x".repeat(100)));
      },
      cancel() {
        cancelled = true;
      },
    });
    const { fetch } = fakeFetch(() => new Response(endless));
    const result = await runWebhook(call, settings(fetch, { maxResponseBytes: 250 }));
    expect(result).toEqual({ ok: true, content: `${"x".repeat(250)}\n\n[truncated: the answer is longer than 250 bytes; only the first 250 are shown]` });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(cancelled).toBe(true);
  });

  it("times out a webhook that never answers, aborting the request", async () => {
    let aborted = false;
    const hanging: typeof globalThis.fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => {
          aborted = true;
          reject(new DOMException("The operation was aborted", "AbortError"));
        });
      });
    const result = await runWebhook(call, settings(hanging, { timeoutMs: 50 }));
    expect(result).toEqual({ ok: false, content: "webhook lookup timed out after 50 ms: it did not answer in time; try again later" });
    expect(aborted).toBe(true);
  });

  it("reports a network error", async () => {
    const failing: typeof globalThis.fetch = async () => {
      throw new TypeError("Network connection lost.");
    };
    expect(await runWebhook(call, settings(failing))).toEqual({
      ok: false,
      content: "webhook lookup could not be reached (https://hooks.example.com): Network connection lost.",
    });
  });
});
