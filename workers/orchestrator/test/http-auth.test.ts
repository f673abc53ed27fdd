// HTTP: bearer auth on /v1/*, the unauthenticated health check, request ids, and the JSON error
// contract for unknown routes and unexpected failures.
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../app.ts";
import { readOrchestratorSettings } from "../../../src/core/env-settings.ts";
import { callApi, createTenantKey, TOKEN_A } from "./call-api.ts";

/** The second token of vitest.config.ts's API_TOKENS: another admin key of the default tenant. */
const TOKEN_B = "test-token-b";
import { readErrorBody } from "./error-body.ts";

describe("bearer auth on /v1/*", () => {
  it.each([
    ["no Authorization header", {}],
    ["an unknown token", { authorization: "Bearer not-a-token" }],
    ["a token that is a prefix of a real one", { authorization: "Bearer test-token" }],
    ["the Basic scheme", { authorization: `Basic ${btoa(`user:${TOKEN_A}`)}` }],
    ["the token without a scheme", { authorization: TOKEN_A }],
    ["Bearer without a token", { authorization: "Bearer " }],
    ["two tokens", { authorization: `Bearer ${TOKEN_A} ${TOKEN_B}` }],
  ])("refuses %s with 401 unauthorized and WWW-Authenticate: Bearer", async (_case, headers) => {
    const response = await callApi("/v1/swarms", { token: null, headers });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
    const error = await readErrorBody(response);
    expect(error.code).toBe("unauthorized");
    expect(error.message).not.toContain(TOKEN_A);
  });

  it.each([
    ["token a", `Bearer ${TOKEN_A}`],
    ["token b", `Bearer ${TOKEN_B}`],
    ["a lower-case scheme", `bearer ${TOKEN_A}`],
  ])("accepts %s", async (_case, authorization) => {
    const response = await callApi("/v1/swarms", { token: null, headers: { authorization } });
    expect(response.status).toBe(200);
  });

  it("refuses before validating a body (no spec details leak to strangers)", async () => {
    const response = await callApi("/v1/swarms", { token: "wrong", json: { name: "" } });
    expect(response.status).toBe(401);
  });

  it("refuses every token (never accepts everything) when API_TOKENS is unset, and still accepts tenant keys", async () => {
    const tenantKey = await createTenantKey({ name: "no-api-tokens", scopes: ["read"] });
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      for (const API_TOKENS of ["", " , ,"]) {
        const app = createApp();
        const refused = await app.request("/v1/swarms", { headers: { authorization: `Bearer ${TOKEN_A}` } }, { ...env, API_TOKENS });
        expect(refused.status).toBe(401);
        expect((await readErrorBody(refused)).code).toBe("unauthorized");
        const accepted = await app.request("/v1/swarms", { headers: { authorization: `Bearer ${tenantKey.key}` } }, { ...env, API_TOKENS });
        expect(accepted.status).toBe(200);
      }
      expect(logged.mock.calls.flat().join(" ")).toMatch(/API_TOKENS is empty or unset/);
    } finally {
      logged.mockRestore();
    }
  });

  it("makes every API_TOKENS token an admin key of the default tenant", async () => {
    for (const token of [TOKEN_A, TOKEN_B]) {
      const me = await (await callApi("/v1/me", { token })).json();
      expect(me).toMatchObject({ tenant: { id: "tn_default", name: "default" }, scopes: ["admin"], key_id: expect.stringMatching(/^key_env_[0-9a-f]{12}$/) });
    }
  });
});

describe("configuration", () => {
  it.each([
    ["a,b", ["a", "b"]],
    ["  a , b ,, ", ["a", "b"]],
    ["", []],
    [undefined, []],
  ])("API_TOKENS %j → %j", (API_TOKENS, tokens) => {
    const { config } = readOrchestratorSettings({ MAX_BODY_BYTES: "10", API_TOKENS });
    expect(config.apiTokens).toEqual(tokens);
  });

  it.each(["", "-1", "0", "1e6", "lots"])("refuses MAX_BODY_BYTES %j", (MAX_BODY_BYTES) => {
    expect(() => readOrchestratorSettings({ MAX_BODY_BYTES, API_TOKENS: "a" })).toThrow(/MAX_BODY_BYTES/);
  });

  it.each([
    [undefined, false],
    ["", false],
    ["false", false],
    ["true", true],
    [" TRUE ", true],
  ])("ALLOW_PRIVATE_NETWORK %j → %j", (ALLOW_PRIVATE_NETWORK, allowed) => {
    expect(readOrchestratorSettings({ MAX_BODY_BYTES: "10", ALLOW_PRIVATE_NETWORK }).config.allowPrivateNetwork).toBe(allowed);
  });

  it("refuses an ALLOW_PRIVATE_NETWORK that is neither true nor false", () => {
    expect(() => readOrchestratorSettings({ MAX_BODY_BYTES: "10", ALLOW_PRIVATE_NETWORK: "yes" })).toThrow(/ALLOW_PRIVATE_NETWORK/);
  });
});

describe("unauthenticated and error routes", () => {
  it("GET /healthz needs no token", async () => {
    const response = await callApi("/healthz", { token: null });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true, service: "edgeswarm-orchestrator" });
  });

  it("answers an unknown route with a JSON 404", async () => {
    for (const path of ["/nope", "/v1/nope"]) {
      const response = await callApi(path);
      expect(response.status).toBe(404);
      expect((await readErrorBody(response)).code).toBe("not_found");
    }
  });

  it("echoes a sane x-request-id and generates one otherwise", async () => {
    const echoed = await callApi("/healthz", { headers: { "x-request-id": "req-123" } });
    expect(echoed.headers.get("x-request-id")).toBe("req-123");
    const replaced = await callApi("/healthz", { headers: { "x-request-id": "bad id\twith spaces" } });
    expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const error = await callApi("/v1/nope", { headers: { "x-request-id": "req-456" } });
    expect(error.headers.get("x-request-id")).toBe("req-456");
    expect((await readErrorBody(error)).request_id).toBe("req-456");
  });

  it("turns an unexpected error into 500 internal with the request id and no internals", async () => {
    const app = createApp();
    // Outside /v1, so no scope row is needed: the error mapping is the same for every route.
    app.get("/boom", () => {
      throw new Error("D1_ERROR: secret internal detail");
    });
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const response = await app.request("/boom", { headers: { authorization: `Bearer ${TOKEN_A}`, "x-request-id": "req-boom" } }, env);
      expect(response.status).toBe(500);
      const error = await readErrorBody(response);
      expect(error).toMatchObject({ code: "internal", request_id: "req-boom", details: [] });
      expect(JSON.stringify(error)).not.toContain("secret internal detail");
      expect(logged.mock.calls.flat().join(" ")).toContain("req-boom");
    } finally {
      logged.mockRestore();
    }
  });
});
