// HTTP: GET /v1/webhooks/signing-key hands each tenant the key its swarms' webhook calls are signed
// with — derived from WEBHOOK_SECRET per tenant, so two tenants never share one.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { deriveWebhookKey } from "../../../src/core/webhook-signature.ts";
import { WEBHOOK_TEST_SECRET } from "../../../test/webhook-test-secret.ts";
import { DEFAULT_TENANT_ID } from "../../../src/core/ids.ts";
import { createApp } from "../app.ts";
import { callApi, createTenantKey, TOKEN_A } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";

const KeySchema = z.strictObject({
  tenant: z.string(),
  key: z.string().regex(/^[0-9a-f]{64}$/),
  header: z.literal("x-edgeswarm-signature"),
  scheme: z.string(),
});

describe("GET /v1/webhooks/signing-key", () => {
  it("answers the caller's own key: HMAC(WEBHOOK_SECRET, context + tenant), different for each tenant, the same for its keys", async () => {
    const other = await createTenantKey({ name: "webhooks-b", scopes: ["read"] });
    const a = KeySchema.parse(await (await callApi("/v1/webhooks/signing-key", { token: TOKEN_A })).json());
    const b = KeySchema.parse(await (await callApi("/v1/webhooks/signing-key", { token: other.key })).json());
    expect(a.tenant).toBe(DEFAULT_TENANT_ID);
    expect(a.key).toBe(await deriveWebhookKey(WEBHOOK_TEST_SECRET, a.tenant));
    expect(b.tenant).toBe(other.tenantId);
    expect(b.key).toBe(await deriveWebhookKey(WEBHOOK_TEST_SECRET, other.tenantId));
    expect(b.key).not.toBe(a.key);
    expect(a.key).not.toContain(WEBHOOK_TEST_SECRET);
  });

  it("needs a token", async () => {
    expect((await callApi("/v1/webhooks/signing-key", { token: null })).status).toBe(401);
  });

  it("says so when the deployment has no WEBHOOK_SECRET", async () => {
    const response = await createApp().request("/v1/webhooks/signing-key", { headers: { authorization: `Bearer ${TOKEN_A}` } }, { ...env, WEBHOOK_SECRET: "" });
    expect(response.status).toBe(404);
    expect((await readErrorBody(response)).message).toMatch(/WEBHOOK_SECRET is unset/);
  });
});
