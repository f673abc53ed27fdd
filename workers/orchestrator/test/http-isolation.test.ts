// Tenant isolation on every route of the app: tenant B's admin key (every scope B can hold) is sent
// at tenant A's swarm, schedule, key, tenant, usage and audit trail, route by route. The table has one
// row per route the Hono app serves, and the first test fails when the app serves a route without one.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ROUTE_SCOPES } from "../../../src/core/api-scopes.ts";
import { deriveWebhookKey } from "../../../src/core/webhook-signature.ts";
import { WEBHOOK_TEST_SECRET } from "../../../test/webhook-test-secret.ts";
import { createApp } from "../app.ts";
import { batchForm, callApi, createKey, createTenantKey, validSpec, type CallOptions } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";
import { seedLedger } from "./seed-ledger.ts";

/** What tenant A owns, made through the API with A's own key. */
interface Owned {
  tenantId: string;
  /** A's own admin key, for the checks after B's attempts. */
  adminKey: string;
  /** Another key of A's, the one B aims at. */
  keyId: string;
  key: string;
  swarmId: string;
  scheduleId: string;
  fileId: string;
  batchId: string;
}

type Row =
  /** A's resource by id: 404 not_found, never 403. */
  | { kind: "hidden"; request: (a: Owned) => [string, CallOptions] }
  /** B's own view: 2xx, and nothing of A's in it. */
  | { kind: "own"; request: (a: Owned) => [string, CallOptions]; check?: (body: unknown, a: Owned, b: { tenantId: string }) => Promise<void> | void }
  /** Only the operator may: B's admin gets 403 whatever the target. */
  | { kind: "operator_only"; request: (a: Owned) => [string, CallOptions] };

const ROUTES: Record<string, Row> = {
  "POST /v1/swarms/estimate": { kind: "own", request: () => ["/v1/swarms/estimate", { json: validSpec() }] },
  "POST /v1/swarms": { kind: "own", request: () => ["/v1/swarms", { json: validSpec({ name: "b's" }) }] },
  "GET /v1/swarms": { kind: "own", request: () => ["/v1/swarms?limit=100", {}] },
  "GET /v1/swarms/:id": { kind: "hidden", request: (a) => [`/v1/swarms/${a.swarmId}`, {}] },
  "GET /v1/swarms/:id/results": { kind: "hidden", request: (a) => [`/v1/swarms/${a.swarmId}/results`, {}] },
  "GET /v1/swarms/:id/plan": { kind: "hidden", request: (a) => [`/v1/swarms/${a.swarmId}/plan`, {}] },
  "POST /v1/swarms/:id/cancel": { kind: "hidden", request: (a) => [`/v1/swarms/${a.swarmId}/cancel`, { method: "POST" }] },
  "GET /v1/swarms/:id/events": { kind: "hidden", request: (a) => [`/v1/swarms/${a.swarmId}/events`, {}] },
  "GET /v1/swarms/:id/live": { kind: "hidden", request: (a) => [`/v1/swarms/${a.swarmId}/live`, { headers: { upgrade: "websocket" } }] },
  "GET /v1/swarms/:id/tasks/:task_id": { kind: "hidden", request: (a) => [`/v1/swarms/${a.swarmId}/tasks/auth.py`, {}] },
  "POST /v1/swarms/:id/rerun": { kind: "hidden", request: (a) => [`/v1/swarms/${a.swarmId}/rerun`, { json: { tasks: "failed" } }] },
  "POST /v1/schedules": { kind: "own", request: () => ["/v1/schedules", { json: { name: "b's", cron: "0 3 * * *", spec: validSpec() } }] },
  "GET /v1/schedules": { kind: "own", request: () => ["/v1/schedules", {}] },
  "DELETE /v1/schedules/:id": { kind: "hidden", request: (a) => [`/v1/schedules/${a.scheduleId}`, { method: "DELETE" }] },
  "GET /v1/usage": { kind: "own", request: () => ["/v1/usage?from=2001-01-01&to=2001-02-01&group_by=swarm", {}] },
  "GET /v1/webhooks/signing-key": {
    kind: "own",
    request: () => ["/v1/webhooks/signing-key", {}],
    check: async (body, a, b) => {
      const parsed = z.object({ tenant: z.string(), key: z.string() }).parse(body);
      expect(parsed.tenant).toBe(b.tenantId);
      expect(parsed.key).not.toBe(await deriveWebhookKey(WEBHOOK_TEST_SECRET, a.tenantId));
    },
  },
  "GET /v1/me": { kind: "own", request: () => ["/v1/me", {}], check: (body, _a, b) => expect(body).toMatchObject({ tenant: { id: b.tenantId } }) },
  "POST /v1/tenants": { kind: "operator_only", request: () => ["/v1/tenants", { json: { name: "b's" } }] },
  "GET /v1/tenants": { kind: "own", request: () => ["/v1/tenants", {}] },
  "GET /v1/tenants/:id": { kind: "hidden", request: (a) => [`/v1/tenants/${a.tenantId}`, {}] },
  "PATCH /v1/tenants/:id": { kind: "hidden", request: (a) => [`/v1/tenants/${a.tenantId}`, { method: "PATCH", json: { limits: { rpm: 1 } } }] },
  "DELETE /v1/tenants/:id": { kind: "hidden", request: (a) => [`/v1/tenants/${a.tenantId}`, { method: "DELETE" }] },
  "POST /v1/keys": { kind: "hidden", request: (a) => ["/v1/keys", { json: { tenant_id: a.tenantId, name: "stolen", scopes: ["admin"] } }] },
  "GET /v1/keys": { kind: "own", request: () => ["/v1/keys", {}] },
  "DELETE /v1/keys/:id": { kind: "hidden", request: (a) => [`/v1/keys/${a.keyId}`, { method: "DELETE" }] },
  "POST /v1/keys/:id/rotate": { kind: "hidden", request: (a) => [`/v1/keys/${a.keyId}/rotate`, { method: "POST" }] },
  "GET /v1/audit": { kind: "own", request: () => ["/v1/audit", {}] },
  // B's secret of the same name as A's is B's own; A's is neither listed, read nor deleted by B.
  "PUT /v1/secrets/:name": { kind: "own", request: () => [`/v1/secrets/${A_SECRET_NAME}`, { method: "PUT", json: { value: "b-value-of-its-own" } }] },
  "GET /v1/secrets": {
    kind: "own",
    request: () => ["/v1/secrets", {}],
    check: (body) => expect(JSON.stringify(body)).not.toContain(A_SECRET_VALUE),
  },
  "DELETE /v1/secrets/:name": { kind: "hidden", request: () => ["/v1/secrets/a_only_secret", { method: "DELETE" }] },
  "POST /v1/files": { kind: "own", request: () => ["/v1/files", { body: batchForm("b's.jsonl", "{}\n") }] },
  "GET /v1/files": { kind: "own", request: () => ["/v1/files", {}] },
  "GET /v1/files/:id": { kind: "hidden", request: (a) => [`/v1/files/${a.fileId}`, {}] },
  "GET /v1/files/:id/content": { kind: "hidden", request: (a) => [`/v1/files/${a.fileId}/content`, {}] },
  "DELETE /v1/files/:id": { kind: "hidden", request: (a) => [`/v1/files/${a.fileId}`, { method: "DELETE" }] },
  "POST /v1/batches": {
    kind: "hidden",
    request: (a) => ["/v1/batches", { json: { input_file_id: a.fileId, endpoint: "/v1/chat/completions", completion_window: "24h" } }],
  },
  "GET /v1/batches": { kind: "own", request: () => ["/v1/batches", {}] },
  "GET /v1/batches/:id": { kind: "hidden", request: (a) => [`/v1/batches/${a.batchId}`, {}] },
  "POST /v1/batches/:id/cancel": { kind: "hidden", request: (a) => [`/v1/batches/${a.batchId}/cancel`, { method: "POST" }] },
};

const A_SECRET_NAME = "a_token";
const A_SECRET_VALUE = "a-secret-value-9f8e7d";

/** Routes the app serves without a tenant: no row needed. */
const PUBLIC_ROUTES = new Set(["GET /healthz", "GET /openapi.json"]);

function servedRoutes(): string[] {
  const routes = createApp()
    .routes.filter((route) => route.method !== "ALL")
    .map((route) => `${route.method} ${route.path}`)
    .filter((route) => !PUBLIC_ROUTES.has(route));
  return [...new Set(routes)].sort();
}

async function setUpTenantA(): Promise<Owned> {
  const a = await createTenantKey({ name: "tenant a", scopes: ["admin"] });
  const swarm = await callApi("/v1/swarms", { token: a.key, json: { name: "a's goal", model: "mock-1", goal: "Plan a's secret work." } });
  expect(swarm.status).toBe(202);
  const swarmId = z.object({ id: z.string() }).parse(await swarm.json()).id;
  const schedule = await callApi("/v1/schedules", { token: a.key, json: { name: "a's", cron: "0 * * * *", spec: validSpec() } });
  expect(schedule.status).toBe(201);
  const scheduleId = z.object({ id: z.string() }).parse(await schedule.json()).id;
  // A's usage: a ledger row in the window the usage row reads.
  await seedLedger([{ call_id: `${swarmId}:t1:1:1`, swarm_id: swarmId, tenant: a.tenantId, created_at: Date.UTC(2001, 0, 15), cost_usd: 0.5 }]);
  // A's secrets: one whose name B also uses (B's PUT makes B's own), one only A has.
  for (const name of [A_SECRET_NAME, "a_only_secret"]) {
    expect((await callApi(`/v1/secrets/${name}`, { token: a.key, method: "PUT", json: { value: A_SECRET_VALUE } })).status).toBe(201);
  }
  // A key of A's that B will aim at (a second one, so A's own admin key stays for the after-checks).
  const target = await createKey(a.tenantId, { token: a.key, scopes: ["read"], name: "a's reader" });
  const file = await callApi("/v1/files", { token: a.key, body: batchForm("a's.jsonl", "a's secret lines\n") });
  expect(file.status).toBe(200);
  const fileId = z.object({ id: z.string() }).parse(await file.json()).id;
  const batch = await callApi("/v1/batches", { token: a.key, json: { input_file_id: fileId, endpoint: "/v1/chat/completions", completion_window: "24h" } });
  expect(batch.status).toBe(200);
  const batchId = z.object({ id: z.string() }).parse(await batch.json()).id;
  return { tenantId: a.tenantId, adminKey: a.key, keyId: target.keyId, key: target.key, swarmId, scheduleId, fileId, batchId };
}

describe("tenant isolation on every route", () => {
  it("has one row for every route the app serves, and one scope for each (no more, no fewer)", () => {
    const served = servedRoutes();
    expect(served).toEqual(Object.keys(ROUTES).sort());
    expect(served).toEqual(Object.keys(ROUTE_SCOPES).sort());
  });

  it("another tenant's admin key finds nothing of tenant A's on any route: 404 by id, absent from its own views", async () => {
    const a = await setUpTenantA();
    const b = await createTenantKey({ name: "tenant b", scopes: ["admin"] });
    const aIds = [a.tenantId, a.keyId, a.swarmId, a.scheduleId, a.fileId, a.batchId];
    const seen: string[] = [];
    for (const [route, row] of Object.entries(ROUTES)) {
      const [path, options] = row.request(a);
      const response = await callApi(path, { ...options, token: b.key });
      const text = await response.text();
      seen.push(`${route} → ${response.status}`);
      for (const id of aIds) expect(text, `${route} mentions ${id}`).not.toContain(id);
      if (row.kind === "hidden") {
        expect(response.status, route).toBe(404);
        expect(z.object({ error: z.object({ code: z.literal("not_found") }) }).parse(JSON.parse(text)).error.code).toBe("not_found");
      } else if (row.kind === "operator_only") {
        expect(response.status, route).toBe(403);
      } else {
        expect(response.status >= 200 && response.status < 300, `${route}: ${response.status} ${text.slice(0, 200)}`).toBe(true);
        await row.check?.(text === "" ? null : JSON.parse(text), a, b);
      }
    }
    console.log(`isolation: ${seen.join("; ")}`);

    // A's things are untouched by B's attempts: the swarm not cancelled, the schedule, key and tenant alive.
    const { adminKey } = a;
    const status = z.object({ state: z.string() }).parse(await (await callApi(`/v1/swarms/${a.swarmId}`, { token: adminKey })).json());
    expect(status.state).not.toBe("cancelled");
    const schedules = await (await callApi("/v1/schedules", { token: adminKey })).text();
    expect(schedules).toContain(a.scheduleId);
    expect((await callApi("/v1/me", { token: a.key })).status).toBe(200);
    const tenant = z
      .object({ limits: z.record(z.string(), z.unknown()) })
      .parse(await (await callApi(`/v1/tenants/${a.tenantId}`, { token: adminKey })).json());
    expect(tenant.limits).toEqual({});
    const usage = await (await callApi("/v1/usage?from=2001-01-01&to=2001-02-01&group_by=swarm", { token: adminKey })).text();
    expect(usage).toContain(a.swarmId);
    const secrets = z
      .object({ secrets: z.array(z.object({ name: z.string(), created_at: z.string(), updated_at: z.string() })) })
      .parse(await (await callApi("/v1/secrets", { token: adminKey })).json());
    expect(secrets.secrets.map((s) => s.name)).toEqual([A_SECRET_NAME, "a_only_secret"].sort());
    // B's PUT of the same name wrote B's row, not A's: A's was never updated.
    expect(secrets.secrets.every((s) => s.created_at === s.updated_at)).toBe(true);
    expect(await (await callApi(`/v1/files/${a.fileId}/content`, { token: adminKey })).text()).toBe("a's secret lines\n");
  });

  it("a read key of tenant B gets 404 too, not 403, for A's swarm on every swarm route", async () => {
    const a = await setUpTenantA();
    const reader = await createTenantKey({ name: "tenant b reader", scopes: ["read"] });
    for (const [route, row] of Object.entries(ROUTES)) {
      if (!/\/v1\/(swarms|files|batches)\/:id/.test(route) || !route.startsWith("GET")) continue;
      const [path, options] = row.request(a);
      const response = await callApi(path, { ...options, token: reader.key });
      expect(response.status, route).toBe(404);
      expect((await readErrorBody(response)).code).toBe("not_found");
    }
  });
});
