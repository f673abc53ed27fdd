// HTTP: /v1/secrets — a tenant's write-only secrets (an MCP server's `credential`). A value is stored
// only as AES-GCM ciphertext under a key derived for its tenant, and never comes back: not in an
// answer, an error, or the D1 row. A swarm's credential reaches the MCP server as a bearer token.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createApp } from "../app.ts";
import { callApi, createKey, createTenantKey, validSpec } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";

const SecretListSchema = z.strictObject({
  secrets: z.array(z.strictObject({ name: z.string(), created_at: z.string(), updated_at: z.string() })),
});

const value = (label: string) => `tok_${label}_${crypto.randomUUID()}`;

describe("PUT / GET / DELETE /v1/secrets", () => {
  it("stores a value write-only: 201 then 200 on update, listed by name and dates, never returned, encrypted in D1", async () => {
    const tenant = await createTenantKey({ name: "secrets", scopes: ["run"] });
    const first = value("first");
    const second = value("second");
    const created = await callApi("/v1/secrets/search_token", { token: tenant.key, method: "PUT", json: { value: first } });
    expect(created.status).toBe(201);
    const createdText = await created.text();
    expect(createdText).not.toContain(first);
    const updated = await callApi("/v1/secrets/search_token", { token: tenant.key, method: "PUT", json: { value: second } });
    expect(updated.status).toBe(200);
    const listText = await (await callApi("/v1/secrets", { token: tenant.key })).text();
    expect(SecretListSchema.parse(JSON.parse(listText)).secrets.map((s) => s.name)).toEqual(["search_token"]);
    for (const v of [first, second]) expect(listText).not.toContain(v);
    const rows = await env.LEDGER_DB.prepare("SELECT * FROM tenant_secrets WHERE tenant_id = ?").bind(tenant.tenantId).all();
    expect(rows.results).toHaveLength(1);
    for (const v of [first, second]) expect(JSON.stringify(rows.results)).not.toContain(v);
    expect((await callApi("/v1/secrets/search_token", { token: tenant.key, method: "DELETE" })).status).toBe(204);
    expect((await callApi("/v1/secrets/search_token", { token: tenant.key, method: "DELETE" })).status).toBe(404);
    expect(SecretListSchema.parse(await (await callApi("/v1/secrets", { token: tenant.key })).json()).secrets).toEqual([]);
  });

  it("needs the run scope to write; a read key may list", async () => {
    const tenant = await createTenantKey({ name: "secrets scopes", scopes: ["admin"] });
    const reader = await createKey(tenant.tenantId, { token: tenant.key, scopes: ["read"] });
    expect((await callApi("/v1/secrets/x", { token: reader.key, method: "PUT", json: { value: "v" } })).status).toBe(403);
    expect((await callApi("/v1/secrets/x", { token: reader.key, method: "DELETE" })).status).toBe(403);
    expect((await callApi("/v1/secrets", { token: reader.key })).status).toBe(200);
    expect((await callApi("/v1/secrets", { token: null })).status).toBe(401);
  });

  it.each([
    ["/v1/secrets/has.dot", { value: "v" }, "name"],
    ["/v1/secrets/ok", { value: "" }, "value"],
    ["/v1/secrets/ok", { value: "two words" }, "value"],
    ["/v1/secrets/ok", { value: "v", extra: 1 }, ""],
  ])("refuses PUT %s %j with a 400 that does not echo the value", async (path, body, at) => {
    const response = await callApi(path, { method: "PUT", json: body });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    if (at !== "") expect(error.details[0]?.path).toBe(at);
    if (body.value.length > 1) expect(JSON.stringify(error)).not.toContain(body.value);
  });
});

describe("an MCP server's credential", () => {
  const submit = async (token: string, spec: Record<string, unknown>): Promise<Response> =>
    createApp().request(
      "/v1/swarms",
      { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(spec) },
      { ...env, ALLOW_PRIVATE_NETWORK: "true" },
    );

  it("is refused at mcp_servers.<i>.credential when the tenant has no such secret", async () => {
    const tenant = await createTenantKey({ name: "credential missing", scopes: ["run"] });
    const response = await submit(tenant.key, validSpec({ mcp_servers: [{ name: "code", url: `${env.MOCK_MCP_URL}/mcp`, credential: "nope" }] }));
    expect(response.status).toBe(400);
    expect((await readErrorBody(response)).details).toEqual([{ path: "mcp_servers.0.credential", message: expect.stringContaining('no secret "nope"') }]);
  });

  it("reaches the server as a bearer token for the submit-time read, and only there; another tenant's secret is not found", async () => {
    const owner = await createTenantKey({ name: "credential owner", scopes: ["run"] });
    const other = await createTenantKey({ name: "credential other", scopes: ["run"] });
    const secret = value("mcp");
    expect((await callApi("/v1/secrets/code_search", { token: owner.key, method: "PUT", json: { value: secret } })).status).toBe(201);
    const spec = validSpec({ mcp_servers: [{ name: "code", url: `${env.MOCK_MCP_URL}/mcp?credential=1`, credential: "code_search" }] });
    const accepted = await submit(owner.key, spec);
    expect(accepted.status).toBe(202);
    expect(await accepted.text()).not.toContain(secret);
    const stats = (await (await fetch(`${env.MOCK_MCP_URL}/_stats`)).json()) as { authorizations: string[] };
    expect(stats.authorizations).toContain(`Bearer ${secret}`);
    const refused = await submit(other.key, spec);
    expect(refused.status).toBe(400);
    expect((await readErrorBody(refused)).details[0]?.path).toBe("mcp_servers.0.credential");
  });
});
