// HTTP: tenants and their keys, end to end through the API as a new user would use them with the
// operator token (an API_TOKENS token): keys shown once and stored hashed, scopes, revoke and rotate
// effective on the next request, expiry, per-tenant limits (rpm with Retry-After, concurrent swarms,
// tasks per swarm, models, monthly USD), who may manage whom, /v1/me, and the audit trail.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createApp } from "../app.ts";
import { callApi, createKey, createTenantKey, TOKEN_A, validSpec } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";
import { seedLedger } from "./seed-ledger.ts";

const TenantSchema = z.strictObject({
  id: z.string().regex(/^tn_[a-z2-7]{16}$/),
  name: z.string(),
  limits: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  updated_at: z.string(),
});
const KeyViewSchema = z.strictObject({
  id: z.string().regex(/^key_[a-z2-7]{16}$/),
  tenant_id: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  prefix: z.string().regex(/^es_local_[0-9a-f]{8}$/),
  rpm: z.number().nullable(),
  expires_at: z.string().nullable(),
  created_at: z.string(),
  rotated_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});
const CreatedKeySchema = KeyViewSchema.extend({ key: z.string().regex(/^es_local_[0-9a-f]{48}$/) });
const AuditSchema = z.strictObject({
  events: z.array(
    z.strictObject({
      id: z.string(),
      created_at: z.string(),
      tenant_id: z.string(),
      key_id: z.string().nullable(),
      action: z.string(),
      target_id: z.string(),
      request_id: z.string().nullable(),
      details: z.record(z.string(), z.unknown()),
    }),
  ),
  next_cursor: z.string().nullable(),
});

async function createTenant(body: Record<string, unknown>, token = TOKEN_A) {
  const response = await callApi("/v1/tenants", { json: body, token });
  expect(response.status).toBe(201);
  return TenantSchema.parse(await response.json());
}

/** Polls GET /v1/swarms (as a client would) until the swarm is listed in `state`; fails after 100 polls. */
async function untilListed(token: string, id: string, state: string): Promise<void> {
  const ListSchema = z.object({ swarms: z.array(z.object({ id: z.string(), state: z.string() })) });
  for (let poll = 0; poll < 100; poll++) {
    const { swarms } = ListSchema.parse(await (await callApi("/v1/swarms", { token })).json());
    if (swarms.find((s) => s.id === id)?.state === state) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`swarm ${id} was never listed as ${state}`);
}

async function startSwarm(token: string, spec = validSpec()) {
  return callApi("/v1/swarms", { json: spec, token });
}

describe("a new user sets up two tenants with the operator token", () => {
  it("creates tenants and keys; the key is shown once, stored as a SHA-256 hash, and opens only its tenant", async () => {
    const red = await createTenant({ name: "team red", limits: { rpm: 600, models: ["mock-1"] } });
    const blue = await createTenant({ name: "team blue" });
    expect(red.limits).toEqual({ rpm: 600, models: ["mock-1"] });

    const response = await callApi("/v1/keys", { json: { tenant_id: red.id, name: "ci", scopes: ["run"] } });
    expect(response.status).toBe(201);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const created = CreatedKeySchema.parse(await response.json());
    expect(created.key.startsWith(created.prefix)).toBe(true);

    // D1 holds the digest and the prefix, never the key.
    const row = await env.LEDGER_DB.prepare("SELECT * FROM api_keys WHERE id = ?").bind(created.id).first();
    expect(JSON.stringify(row)).not.toContain(created.key.slice(created.prefix.length));
    const digest = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(created.key))), (b) =>
      b.toString(16).padStart(2, "0"),
    ).join("");
    expect(row).toMatchObject({ prefix: created.prefix, secret_hash: digest });

    // Listings never show the secret.
    const listed = await (await callApi(`/v1/keys?tenant_id=${red.id}`)).text();
    expect(listed).toContain(created.id);
    expect(listed).not.toContain(created.key);
    z.object({ keys: z.array(KeyViewSchema) }).parse(JSON.parse(listed));

    const swarm = await startSwarm(created.key);
    expect(swarm.status).toBe(202);
    const { id } = z.object({ id: z.string() }).parse(await swarm.json());
    const blueKey = await createKey(blue.id, { scopes: ["read"] });
    expect((await callApi(`/v1/swarms/${id}`, { token: blueKey.key })).status).toBe(404);
    expect((await callApi(`/v1/swarms/${id}`, { token: created.key })).status).toBe(200);
    // The operator is a key of the default tenant: it does not see team red's swarms either.
    expect((await callApi(`/v1/swarms/${id}`)).status).toBe(404);
  });

  it("lists every tenant for the operator, the default one included", async () => {
    const made = await createTenant({ name: "listed" });
    const { tenants } = z.object({ tenants: z.array(TenantSchema.extend({ id: z.string() })) }).parse(await (await callApi("/v1/tenants")).json());
    expect(tenants.map((t) => t.id)).toEqual(expect.arrayContaining(["tn_default", made.id]));
  });
});

describe("scopes", () => {
  it("a read key may GET but not start, cancel or schedule (403 forbidden); a run key may not manage keys", async () => {
    const reader = await createTenantKey({ name: "readers", scopes: ["read"] });
    const refused = await startSwarm(reader.key);
    expect(refused.status).toBe(403);
    expect(await readErrorBody(refused)).toMatchObject({ code: "forbidden", message: expect.stringContaining("needs the run scope") });
    expect((await callApi("/v1/swarms", { token: reader.key })).status).toBe(200);
    expect((await callApi("/v1/schedules", { token: reader.key, json: { name: "x", cron: "0 * * * *", spec: validSpec() } })).status).toBe(403);
    expect((await callApi("/v1/swarms/estimate", { token: reader.key, json: validSpec() })).status).toBe(403);

    const runner = await createKey(reader.tenantId, { scopes: ["run"] });
    expect((await startSwarm(runner.key)).status).toBe(202);
    expect((await callApi("/v1/keys", { token: runner.key })).status).toBe(403);
    expect((await callApi("/v1/audit", { token: runner.key })).status).toBe(403);
  });

  it("refuses a /v1 route that has no row in the scope table (fail closed), even to the operator", async () => {
    const app = createApp();
    app.get("/v1/unlisted", (c) => c.json({ open: true }));
    const response = await app.request("/v1/unlisted", { headers: { authorization: `Bearer ${TOKEN_A}` } }, env);
    expect(response.status).toBe(403);
    expect((await readErrorBody(response)).message).toBe("this route has no scope assigned, so no key may use it");
  });

  it("refuses bad scopes at creation", async () => {
    for (const scopes of [[], ["owner"], ["read", "read"], "admin"]) {
      const response = await callApi("/v1/keys", { json: { tenant_id: "tn_default", name: "x", scopes } });
      expect(response.status).toBe(400);
      const paths = (await readErrorBody(response)).details.map((d) => d.path);
      expect(paths.length > 0 && paths.every((p) => p.startsWith("scopes"))).toBe(true);
    }
  });
});

describe("revoke, rotate and expiry take effect on the very next request", () => {
  it("a revoked key gets 401 at once", async () => {
    const key = await createTenantKey({ name: "revoked", scopes: ["read"] });
    expect((await callApi("/v1/me", { token: key.key })).status).toBe(200);
    expect((await callApi(`/v1/keys/${key.keyId}`, { method: "DELETE" })).status).toBe(204);
    const refused = await callApi("/v1/me", { token: key.key });
    expect(refused.status).toBe(401);
    expect(await readErrorBody(refused)).toMatchObject({ code: "unauthorized", message: "this API key has been revoked" });
    // Revoking again changes nothing; rotating a revoked key is a conflict.
    expect((await callApi(`/v1/keys/${key.keyId}`, { method: "DELETE" })).status).toBe(204);
    expect((await callApi(`/v1/keys/${key.keyId}/rotate`, { method: "POST" })).status).toBe(409);
  });

  it("a revoked key's open event stream ends within seconds (the key is asked again every 5 s), with an unauthorized error, without `done`", async () => {
    const key = await createTenantKey({ name: "streaming", scopes: ["run"] });
    const started = await startSwarm(key.key);
    const { id } = z.object({ id: z.string() }).parse(await started.json());
    const stream = await callApi(`/v1/swarms/${id}/events`, { token: key.key });
    expect(stream.status).toBe(200);
    const reader = stream.body?.getReader();
    if (reader === undefined) throw new Error("no body");
    const decoder = new TextDecoder();
    const first = await reader.read();
    expect(decoder.decode(first.value)).toContain("event: snapshot");
    expect((await callApi(`/v1/keys/${key.keyId}`, { method: "DELETE" })).status).toBe(204);
    let rest = "";
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      rest += decoder.decode(chunk.value);
    }
    expect(rest).not.toContain("event: done");
    expect(rest).toContain("event: error");
    expect(rest).toContain('"code":"unauthorized"');
  }, 20_000);

  it("a revoked key's open live WebSocket closes within seconds, with 1008", async () => {
    const key = await createTenantKey({ name: "live socket", scopes: ["run"] });
    const started = await startSwarm(key.key);
    const { id } = z.object({ id: z.string() }).parse(await started.json());
    const response = await callApi(`/v1/swarms/${id}/live`, { token: key.key, headers: { upgrade: "websocket" } });
    expect(response.status).toBe(101);
    const socket = response.webSocket;
    if (socket === null) throw new Error("no socket");
    const types: string[] = [];
    socket.addEventListener("message", (event) => types.push(z.object({ type: z.string() }).parse(JSON.parse(String(event.data))).type));
    const closed = new Promise<number>((resolve) => socket.addEventListener("close", (event) => resolve(event.code)));
    socket.accept();
    expect((await callApi(`/v1/keys/${key.keyId}`, { method: "DELETE" })).status).toBe(204);
    expect(await closed).toBe(1008);
    expect(types[0]).toBe("snapshot");
    expect(types).not.toContain("done");
  }, 20_000);

  it("rotation gives a new secret under the same id; the old one is refused at once", async () => {
    const key = await createTenantKey({ name: "rotated", scopes: ["run"] });
    const response = await callApi(`/v1/keys/${key.keyId}/rotate`, { method: "POST" });
    expect(response.status).toBe(200);
    const rotated = CreatedKeySchema.parse(await response.json());
    expect(rotated).toMatchObject({ id: key.keyId, tenant_id: key.tenantId, scopes: ["run"], rotated_at: expect.any(String) });
    expect(rotated.key).not.toBe(key.key);
    expect((await callApi("/v1/me", { token: key.key })).status).toBe(401);
    expect((await callApi("/v1/me", { token: rotated.key })).status).toBe(200);
  });

  it("an expired key gets 401; an expiry in the past is refused at creation", async () => {
    const key = await createTenantKey({ name: "expiring", scopes: ["read"] });
    await env.LEDGER_DB.prepare("UPDATE api_keys SET expires_at = 1 WHERE id = ?").bind(key.keyId).run();
    const refused = await callApi("/v1/me", { token: key.key });
    expect(refused.status).toBe(401);
    expect((await readErrorBody(refused)).message).toBe("this API key has expired");
    const past = await callApi("/v1/keys", { json: { tenant_id: key.tenantId, name: "x", scopes: ["read"], expires_at: "2001-01-01T00:00:00Z" } });
    expect(past.status).toBe(400);
    expect((await readErrorBody(past)).details).toEqual([{ path: "expires_at", message: "must be in the future" }]);
    const future = await callApi("/v1/keys", { json: { tenant_id: key.tenantId, name: "x", scopes: ["read"], expires_at: "2999-01-01T00:00:00Z" } });
    expect(CreatedKeySchema.parse(await future.json()).expires_at).toBe("2999-01-01T00:00:00.000Z");
  });

  it("deleting a tenant revokes its keys; the default tenant cannot be deleted", async () => {
    const key = await createTenantKey({ name: "doomed", scopes: ["read"] });
    expect((await callApi(`/v1/tenants/${key.tenantId}`, { method: "DELETE" })).status).toBe(204);
    expect((await callApi("/v1/me", { token: key.key })).status).toBe(401);
    expect((await callApi(`/v1/tenants/${key.tenantId}`)).status).toBe(404);
    const keys = z.object({ keys: z.array(KeyViewSchema) }).parse(await (await callApi("/v1/keys")).json());
    expect(keys.keys.find((k) => k.id === key.keyId)?.revoked_at).not.toBeNull();
    expect((await callApi("/v1/tenants/tn_default", { method: "DELETE" })).status).toBe(409);
  });
});

describe("who manages whom", () => {
  it("a tenant's admin manages its own keys only, and cannot create, change or delete tenants", async () => {
    const admin = await createTenantKey({ name: "self-managed", scopes: ["admin"] });
    const other = await createTenantKey({ name: "neighbour", scopes: ["read"] });
    expect((await callApi("/v1/tenants", { token: admin.key, json: { name: "mine" } })).status).toBe(403);
    expect((await callApi(`/v1/tenants/${admin.tenantId}`, { token: admin.key, method: "PATCH", json: { limits: { rpm: 1_000_000 } } })).status).toBe(403);
    expect((await callApi(`/v1/tenants/${admin.tenantId}`, { token: admin.key, method: "DELETE" })).status).toBe(403);
    expect((await callApi(`/v1/tenants/${other.tenantId}`, { token: admin.key })).status).toBe(404);

    // Keys for its own tenant: yes; for another tenant (LiteLLM #7336): that tenant is not found.
    const own = await createKey(admin.tenantId, { token: admin.key, scopes: ["read"] });
    expect(own.tenantId).toBe(admin.tenantId);
    const foreign = await callApi("/v1/keys", { token: admin.key, json: { tenant_id: other.tenantId, name: "x", scopes: ["admin"] } });
    expect(foreign.status).toBe(404);
    expect((await callApi(`/v1/keys/${other.keyId}`, { token: admin.key, method: "DELETE" })).status).toBe(404);
    expect((await callApi("/v1/me", { token: other.key })).status).toBe(200);

    const { keys } = z.object({ keys: z.array(KeyViewSchema) }).parse(await (await callApi("/v1/keys", { token: admin.key })).json());
    expect(new Set(keys.map((k) => k.tenant_id))).toEqual(new Set([admin.tenantId]));
    const { tenants } = z.object({ tenants: z.array(TenantSchema) }).parse(await (await callApi("/v1/tenants", { token: admin.key })).json());
    expect(tenants.map((t) => t.id)).toEqual([admin.tenantId]);
  });
});

describe("limits per tenant, shared by all of its keys", () => {
  it("a key over its tenant's rpm gets 429 rate_limited with Retry-After; a second key of the tenant does not get more", async () => {
    const first = await createTenantKey({ name: "rpm-2", scopes: ["read"], limits: { rpm: 2 } });
    const second = await createKey(first.tenantId, { scopes: ["read"] });
    // A bucket of 2 refills one request every 30 s: three requests in a row cannot all pass.
    const statuses = [];
    let limited: Response | undefined;
    for (const token of [first.key, second.key, first.key, second.key]) {
      const response = await callApi("/v1/me", { token });
      statuses.push(response.status);
      if (response.status === 429) limited ??= response;
      else await response.body?.cancel();
    }
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(3);
    expect(limited).toBeDefined();
    if (limited === undefined) return;
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 30).toBe(true);
    expect(await readErrorBody(limited)).toMatchObject({ code: "rate_limited", message: expect.stringContaining("tenant rpm 2") });
    // Another tenant is not affected.
    expect((await callApi("/v1/me", { token: (await createTenantKey({ name: "unlimited", scopes: ["read"] })).key })).status).toBe(200);
  });

  it("a key may carry a lower rpm of its own", async () => {
    const tenant = await createTenantKey({ name: "key-rpm", scopes: ["read"], limits: { rpm: 1_000 } });
    const slow = await createKey(tenant.tenantId, { scopes: ["read"], rpm: 1 });
    expect((await callApi("/v1/me", { token: slow.key })).status).toBe(200);
    const limited = await callApi("/v1/me", { token: slow.key });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await readErrorBody(limited)).message).toContain("key rpm 1");
    expect((await callApi("/v1/me", { token: tenant.key })).status).toBe(200);
  });

  it("refuses more tasks than max_tasks_per_swarm and a model outside models (400 invalid_spec naming the field)", async () => {
    const key = await createTenantKey({ name: "narrow", scopes: ["run"], limits: { max_tasks_per_swarm: 2, models: ["mock-economy"] } });
    const response = await startSwarm(key.key, validSpec({ model: "mock-1" }));
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_spec");
    expect(error.details.map((d) => d.path)).toEqual(["tasks", "model"]);
    expect((await startSwarm(key.key, validSpec({ model: "mock-economy", tasks: [{ prompt: "one" }, { prompt: "two" }] }))).status).toBe(202);
    const goal = await startSwarm(key.key, { name: "g", model: "mock-economy", goal: "Plan it." });
    expect((await readErrorBody(goal)).details.map((d) => d.path)).toEqual(["planner.max_tasks"]);
    const scheduled = await callApi("/v1/schedules", { token: key.key, json: { name: "s", cron: "0 * * * *", spec: validSpec({ model: "mock-1" }) } });
    expect(scheduled.status).toBe(400);
    expect((await readErrorBody(scheduled)).details.map((d) => d.path)).toEqual(["spec.tasks", "spec.model"]);
  });

  it("refuses a swarm over max_concurrent_swarms with 409 conflict, and admits one again after a cancel", async () => {
    const key = await createTenantKey({ name: "one-at-a-time", scopes: ["run"], limits: { max_concurrent_swarms: 1 } });
    const first = await startSwarm(key.key);
    expect(first.status).toBe(202);
    const second = await startSwarm(key.key);
    expect(second.status).toBe(409);
    expect((await readErrorBody(second)).details.map((d) => d.path)).toEqual(["max_concurrent_swarms"]);
    const { id } = z.object({ id: z.string() }).parse(await first.json());
    expect((await callApi(`/v1/swarms/${id}/cancel`, { method: "POST", token: key.key })).status).toBe(200);
    // The count is the D1 index, which the room updates at its next ledger flush (LEDGER_FLUSH_MS):
    // once the listing shows the swarm cancelled, the slot is free.
    await untilListed(key.key, id, "cancelled");
    expect((await startSwarm(key.key)).status).toBe(202);
  });

  it("a tenant's monthly_usd set by PATCH applies to its next swarm (402 budget_exceeded)", async () => {
    const key = await createTenantKey({ name: "patched", scopes: ["run"] });
    const patched = await callApi(`/v1/tenants/${key.tenantId}`, { method: "PATCH", json: { limits: { monthly_usd: 0.000001, rpm: 500 } } });
    expect(TenantSchema.parse(await patched.json()).limits).toEqual({ monthly_usd: 0.000001, rpm: 500 });
    expect((await startSwarm(key.key)).status).toBe(402);
    const cleared = await callApi(`/v1/tenants/${key.tenantId}`, { method: "PATCH", json: { limits: { monthly_usd: null } } });
    expect(TenantSchema.parse(await cleared.json()).limits).toEqual({ rpm: 500 });
    expect((await startSwarm(key.key)).status).toBe(202);
  });
});

describe("GET /v1/me", () => {
  it("answers the caller's tenant, key, scopes, limits and this month's spend", async () => {
    const key = await createTenantKey({ name: "me", scopes: ["read"], limits: { max_tasks_per_swarm: 50 } });
    const me = await (await callApi("/v1/me", { token: key.key })).json();
    expect(me).toEqual({
      tenant: { id: key.tenantId, name: "me" },
      key_id: key.keyId,
      scopes: ["read"],
      limits: { max_tasks_per_swarm: 50 },
      key_rpm: null,
      month: new Date().toISOString().slice(0, 7),
      spent_usd: 0,
    });
  });
});

describe("the audit trail", () => {
  it("records key, tenant and swarm events with the acting key and request id; admins read their own tenant's", async () => {
    const admin = await createTenantKey({ name: "audited", scopes: ["admin"] });
    const started = await callApi("/v1/swarms", { json: validSpec(), token: admin.key, headers: { "x-request-id": "req-audit-start" } });
    const { id } = z.object({ id: z.string() }).parse(await started.json());
    await callApi(`/v1/swarms/${id}/cancel`, { method: "POST", token: admin.key });
    const reader = await createKey(admin.tenantId, { token: admin.key, scopes: ["read"] });
    await callApi(`/v1/keys/${reader.keyId}/rotate`, { method: "POST", token: admin.key });
    await callApi(`/v1/keys/${reader.keyId}`, { method: "DELETE", token: admin.key });
    await callApi(`/v1/tenants/${admin.tenantId}`, { method: "PATCH", json: { name: "audited, renamed" } });

    const audit = AuditSchema.parse(await (await callApi("/v1/audit", { token: admin.key })).json());
    const actions = audit.events.map((e) => `${e.action} ${e.target_id}`);
    expect(actions).toEqual([
      `tenant.updated ${admin.tenantId}`,
      `key.revoked ${reader.keyId}`,
      `key.rotated ${reader.keyId}`,
      `key.created ${reader.keyId}`,
      `swarm.cancelled ${id}`,
      `swarm.started ${id}`,
      `key.created ${admin.keyId}`,
      `tenant.created ${admin.tenantId}`,
    ]);
    expect(audit.events.every((e) => e.tenant_id === admin.tenantId)).toBe(true);
    expect(audit.events.find((e) => e.action === "swarm.started")).toMatchObject({ key_id: admin.keyId, request_id: "req-audit-start" });
    expect(audit.events.find((e) => e.action === "tenant.created")?.key_id).toMatch(/^key_env_[0-9a-f]{12}$/);
    // Nothing in it opens anything.
    expect(JSON.stringify(audit)).not.toContain(admin.key);

    // Pages with the cursor; the operator reads every tenant's, or one's.
    const firstPage = AuditSchema.parse(await (await callApi("/v1/audit?limit=3", { token: admin.key })).json());
    expect(firstPage.events).toHaveLength(3);
    const next = AuditSchema.parse(await (await callApi(`/v1/audit?limit=3&cursor=${firstPage.next_cursor}`, { token: admin.key })).json());
    expect(next.events.map((e) => e.id)).toEqual(audit.events.slice(3, 6).map((e) => e.id));
    const operator = AuditSchema.parse(await (await callApi(`/v1/audit?tenant_id=${admin.tenantId}`)).json());
    expect(operator.events.map((e) => e.id)).toEqual(audit.events.map((e) => e.id));
    expect((await callApi("/v1/audit?tenant_id=tn_default", { token: admin.key })).status).toBe(404);
  });
});

describe("usage across tenants", () => {
  it("the operator reads any tenant's usage with tenant_id; nobody else reads another tenant's", async () => {
    const team = await createTenantKey({ name: "usage team", scopes: ["admin"] });
    const other = await createTenantKey({ name: "usage other", scopes: ["admin"] });
    await seedLedger([{ call_id: "sw_usageteam:t:1:1", swarm_id: "sw_usageteam", tenant: team.tenantId, created_at: Date.UTC(2001, 0, 10), cost_usd: 0.25 }]);
    const query = "/v1/usage?from=2001-01-01&to=2001-02-01&group_by=swarm";
    const operator = await (await callApi(`${query}&tenant_id=${team.tenantId}`)).json();
    expect(operator).toMatchObject({ rows: [{ key: "sw_usageteam" }] });
    expect(await (await callApi(query, { token: team.key })).json()).toEqual(operator);
    expect((await callApi(`${query}&tenant_id=${team.tenantId}`, { token: other.key })).status).toBe(404);
    const reader = await createKey("tn_default", { scopes: ["read"] });
    expect((await callApi(`${query}&tenant_id=${team.tenantId}`, { token: reader.key })).status).toBe(404);
    expect((await callApi(`${query}&tenant_id=nonsense`)).status).toBe(404);
  });
});
