// /v1/keys: create, list, revoke and rotate tenant API keys (admin scope). A key's secret is in the
// create and rotate answers only; D1 keeps its SHA-256 and prefix. An operator manages every
// tenant's keys; another tenant's admin only its own tenant's.
import { Hono } from "hono";
import { hashApiKey } from "../../../src/core/api-key.ts";
import { ApiError } from "../../../src/core/errors.ts";
import { KeyListQuerySchema, parseKeyCreate } from "../../../src/core/tenant-requests.ts";
import type { AppEnv } from "../app-env.ts";
import { recordRequestAudit } from "../audit-trail.ts";
import { readJsonBody } from "../json-body.ts";
import { parseQuery } from "../parse-query.ts";
import { requireVisibleKey, requireVisibleTenant } from "../tenant-access.ts";
import { toKeyView } from "../tenant-views.ts";

export const keyRoutes = new Hono<AppEnv>()
  .post("/", async (c) => {
    const { deps } = c.var;
    const input = parseKeyCreate(await readJsonBody(c), deps.now());
    if (!input.ok) throw new ApiError("invalid_request", "the API key is invalid", input.error);
    const tenant = await requireVisibleTenant(c, input.value.tenantId);
    const { key, prefix } = deps.newApiKey();
    const record = {
      id: deps.newKeyId(),
      tenantId: tenant.id,
      name: input.value.name,
      scopes: input.value.scopes,
      prefix,
      rpm: input.value.rpm,
      expiresAt: input.value.expiresAt,
      createdAt: deps.now(),
      rotatedAt: null,
      revokedAt: null,
    };
    await deps.keys.insert(record, await hashApiKey(key));
    await recordRequestAudit(c, {
      action: "key.created",
      targetId: record.id,
      tenantId: tenant.id,
      details: { name: record.name, scopes: record.scopes, prefix },
    });
    c.header("Cache-Control", "no-store");
    return c.json({ ...toKeyView(record), key }, 201);
  })

  .get("/", async (c) => {
    const { caller, deps } = c.var;
    const query = parseQuery(c, KeyListQuerySchema);
    if (query.tenant_id !== undefined) await requireVisibleTenant(c, query.tenant_id);
    const tenantId = query.tenant_id ?? (caller.operator ? null : caller.tenant);
    return c.json({ keys: (await deps.keys.list(tenantId)).map(toKeyView) });
  })

  // Revoked at once: auth reads the key from D1 on every request. Revoking a revoked key changes nothing.
  .delete("/:id", async (c) => {
    const key = await requireVisibleKey(c, c.req.param("id"));
    if (await c.var.deps.keys.revoke(key.id, c.var.deps.now())) {
      await recordRequestAudit(c, { action: "key.revoked", targetId: key.id, tenantId: key.tenantId, details: { prefix: key.prefix } });
    }
    return c.body(null, 204);
  })

  // The same key id, scopes and limits with a new secret; the old secret stops working at once.
  .post("/:id/rotate", async (c) => {
    const { deps } = c.var;
    const key = await requireVisibleKey(c, c.req.param("id"));
    if (key.revokedAt !== null) throw new ApiError("conflict", "a revoked key cannot be rotated; create a new one");
    const fresh = deps.newApiKey();
    const rotatedAt = deps.now();
    if (!(await deps.keys.rotate(key.id, { prefix: fresh.prefix, secretHash: await hashApiKey(fresh.key) }, rotatedAt))) {
      throw new ApiError("conflict", "the key was revoked meanwhile; create a new one");
    }
    await recordRequestAudit(c, { action: "key.rotated", targetId: key.id, tenantId: key.tenantId, details: { old_prefix: key.prefix, prefix: fresh.prefix } });
    c.header("Cache-Control", "no-store");
    return c.json({ ...toKeyView({ ...key, prefix: fresh.prefix, rotatedAt }), key: fresh.key });
  });
