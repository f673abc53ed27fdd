// /v1/tenants: create, list, read, change and delete tenants (admin scope). Only the default
// tenant's admin keys (the operator) create, change or delete; another tenant's admin sees its own.
import { Hono } from "hono";
import { ApiError } from "../../../src/core/errors.ts";
import { DEFAULT_TENANT_ID } from "../../../src/core/ids.ts";
import { mergeTenantLimits } from "../../../src/core/tenant-limits.ts";
import { parseTenantCreate, parseTenantPatch } from "../../../src/core/tenant-requests.ts";
import type { AppEnv } from "../app-env.ts";
import { recordRequestAudit } from "../audit-trail.ts";
import { readJsonBody } from "../json-body.ts";
import { requireOperator, requireVisibleTenant } from "../tenant-access.ts";
import { toTenantView } from "../tenant-views.ts";

export const tenantRoutes = new Hono<AppEnv>()
  .post("/", async (c) => {
    requireOperator(c, "create tenants");
    const input = parseTenantCreate(await readJsonBody(c));
    if (!input.ok) throw new ApiError("invalid_request", "the tenant is invalid", input.error);
    const { deps } = c.var;
    const now = deps.now();
    const tenant = { id: deps.newTenantId(), name: input.value.name, limits: input.value.limits, createdAt: now, updatedAt: now };
    await deps.tenants.insert(tenant);
    await recordRequestAudit(c, {
      action: "tenant.created",
      targetId: tenant.id,
      tenantId: tenant.id,
      details: { name: tenant.name, limits: Object.keys(tenant.limits) },
    });
    return c.json(toTenantView(tenant), 201);
  })

  .get("/", async (c) => {
    const { caller, deps } = c.var;
    const tenants = caller.operator ? await deps.tenants.list() : [await requireVisibleTenant(c, caller.tenant)];
    return c.json({ tenants: tenants.map(toTenantView) });
  })

  .get("/:id", async (c) => c.json(toTenantView(await requireVisibleTenant(c, c.req.param("id")))))

  .patch("/:id", async (c) => {
    const current = await requireVisibleTenant(c, c.req.param("id"));
    requireOperator(c, "change tenants");
    const patch = parseTenantPatch(await readJsonBody(c));
    if (!patch.ok) throw new ApiError("invalid_request", "the tenant change is invalid", patch.error);
    const { deps } = c.var;
    const name = patch.value.name ?? current.name;
    const limits = patch.value.limits === undefined ? current.limits : mergeTenantLimits(current.limits, patch.value.limits);
    const updatedAt = deps.now();
    if (!(await deps.tenants.update(current.id, { name, limits, updatedAt }))) throw new ApiError("not_found", "tenant not found");
    await recordRequestAudit(c, {
      action: "tenant.updated",
      targetId: current.id,
      tenantId: current.id,
      details: { ...(patch.value.name === undefined ? {} : { name }), limits: Object.keys(patch.value.limits ?? {}) },
    });
    return c.json(toTenantView({ ...current, name, limits, updatedAt }));
  })

  // Its keys are revoked with it; its swarms run to their end and stay in the ledger under its id.
  .delete("/:id", async (c) => {
    const current = await requireVisibleTenant(c, c.req.param("id"));
    requireOperator(c, "delete tenants");
    if (current.id === DEFAULT_TENANT_ID) throw new ApiError("conflict", "the default tenant cannot be deleted: the API_TOKENS tokens belong to it");
    if (!(await c.var.deps.tenants.delete(current.id, c.var.deps.now()))) throw new ApiError("not_found", "tenant not found");
    await recordRequestAudit(c, { action: "tenant.deleted", targetId: current.id, tenantId: current.id });
    return c.body(null, 204);
  });
