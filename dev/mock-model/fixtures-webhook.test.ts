// Tests the local-example endpoints over real loopback HTTP: GET /fixtures/* (deterministic files,
// the redirect for SSRF tests) and the POST /tools/lint webhook with and without signatures.

import { describe, expect, it } from "vitest";
import { useMockModel } from "./test-helpers.ts";
import { SIGNATURE_HEADER, signWebhook, startMockModel } from "./server.ts";
import type { MockModelHandle } from "./server.ts";

const { mock } = await useMockModel();

const get = (path: string, init: RequestInit = {}): Promise<Response> => fetch(`${mock.url}${path}`, init);
const lint = (m: MockModelHandle, body: string, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${m.url}/tools/lint`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
const nowS = (): number => Math.floor(Date.now() / 1000);

interface Finding {
  rule: string;
  severity: string;
  line: number;
  message: string;
}

describe("GET /fixtures/<path>", () => {
  it("serves a small deterministic text file derived from the path, without auth", async () => {
    const res = await get("/fixtures/src/auth.py");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(res.headers.get("x-mock-model")).toBe("true");
    const text = await res.text();
    expect(text).toMatch(/^# \[mock\] fixture src\/auth\.py \(sha [0-9a-f]{8}\)/);
    expect(text).toContain("def ");
    expect(text.length).toBeLessThan(2000);
    expect(await (await get("/fixtures/src/auth.py")).text()).toBe(text);
    expect(await (await get("/fixtures/src/db.py")).text()).not.toBe(text);
    expect(await (await get("/fixtures/src/app.ts")).text()).toMatch(/^\/\/ \[mock\] fixture src\/app\.ts[\s\S]*export function /);
    const doc = await (await get("/fixtures/docs/Getting%20Started.md?x=1")).text();
    expect(doc).toMatch(/^# \[mock\] .+ \(fixture docs\/Getting Started\.md\)\n/);
    expect(mock.stats().fixture_requests).toBe(5);
  });

  it("/fixtures/redirect?to=URL answers 302 to that URL (any URL: for SSRF tests); without `to` 400; non-GET 405", async () => {
    const target = "http://169.254.169.254/latest/meta-data/";
    const res = await get(`/fixtures/redirect?to=${encodeURIComponent(target)}`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(target);
    await res.arrayBuffer();
    const missing = await get("/fixtures/redirect");
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { param: "to" } });
    const post = await get("/fixtures/a.py", { method: "POST" });
    expect(post.status).toBe(405);
    await post.arrayBuffer();
  });
});

describe("POST /tools/lint", () => {
  it("without a secret: 0–3 deterministic findings derived from the body", async () => {
    const code = ["x = eval(input())  ", "# TODO: remove", "print(x)", "ok = 1"].join("\n");
    const body = JSON.stringify({ path: "src/eval_todo.py", content: code });
    const res = await lint(mock, body);
    expect(res.status).toBe(200);
    const { findings } = (await res.json()) as { findings: Finding[] };
    expect(findings.map((f) => [f.rule, f.line])).toEqual([
      ["no-eval", 1],
      ["trailing-whitespace", 1],
      ["todo", 2],
    ]);
    expect(await (await lint(mock, body)).json()).toEqual({ findings });
    for (const other of ["{}", '{"content":"clean"}', "not json at all", '{"a":"b"}']) {
      const r = (await (await lint(mock, other)).json()) as { findings: Finding[] };
      expect(r.findings.length).toBeLessThanOrEqual(3);
    }
    expect(mock.stats()).toMatchObject({ webhook_calls: 6, webhook_rejected: 0 });
  });

  it("lints a fetched fixture: same file, same findings", async () => {
    const text = await (await get("/fixtures/src/lintme.ts")).text();
    const a = (await (await lint(mock, JSON.stringify({ path: "src/lintme.ts", content: text }))).json()) as { findings: Finding[] };
    const b = (await (await lint(mock, JSON.stringify({ path: "src/lintme.ts", content: text }))).json()) as { findings: Finding[] };
    expect(a).toEqual(b);
  });

  it("with webhookSecret: only a valid, fresh x-edgeswarm-signature passes; failures are 401 and counted", async () => {
    const secret = "whsec_test";
    const signed = await startMockModel({ webhookSecret: secret });
    try {
      const body = JSON.stringify({ content: "# TODO: x" });
      // Headers are made just before each request: signed at build time, the ±301 s cases could drift
      // inside the tolerance while earlier requests run.
      const cases: Array<[string, () => Record<string, string>, string, number]> = [
        ["valid", () => ({ [SIGNATURE_HEADER]: signWebhook(secret, body, nowS()) }), body, 200],
        ["valid among several v1", () => ({ [SIGNATURE_HEADER]: `${signWebhook(secret, body, nowS())},v1=${"0".repeat(64)}` }), body, 200],
        ["missing", () => ({}), body, 401],
        ["malformed", () => ({ [SIGNATURE_HEADER]: "garbage" }), body, 401],
        ["wrong secret", () => ({ [SIGNATURE_HEADER]: signWebhook("other", body, nowS()) }), body, 401],
        ["tampered body", () => ({ [SIGNATURE_HEADER]: signWebhook(secret, body, nowS()) }), `${body} `, 401],
        ["stale (301 s)", () => ({ [SIGNATURE_HEADER]: signWebhook(secret, body, nowS() - 301) }), body, 401],
        ["future (301 s)", () => ({ [SIGNATURE_HEADER]: signWebhook(secret, body, nowS() + 301) }), body, 401],
        ["within tolerance (250 s)", () => ({ [SIGNATURE_HEADER]: signWebhook(secret, body, nowS() - 250) }), body, 200],
      ];
      for (const [name, headers, sent, status] of cases) {
        const res = await lint(signed, sent, headers());
        expect(res.status, name).toBe(status);
        const json = (await res.json()) as { findings?: Finding[]; error?: { code: string } };
        if (status === 200) expect(json.findings?.[0]?.rule, name).toBe("todo");
        else expect(json.error?.code, name).toBe("invalid_signature");
      }
      expect(signed.stats()).toMatchObject({ webhook_calls: 9, webhook_rejected: 6, calls: 0 });
    } finally {
      await signed.close();
    }
  });
});
