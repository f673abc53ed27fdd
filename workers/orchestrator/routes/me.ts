// GET /v1/me: who the caller is — tenant, key id, scopes, the tenant's limits, the key's own rpm —
// and what the tenant has spent this UTC month (the D1 ledger; calls not yet flushed are not in it).
import { Hono } from "hono";
import { toBudgetMonth } from "../../../src/core/tenant-budget.ts";
import type { AppEnv } from "../app-env.ts";
import { requireVisibleTenant } from "../tenant-access.ts";

export const meRoutes = new Hono<AppEnv>().get("/", async (c) => {
  const { caller, deps } = c.var;
  const tenant = await requireVisibleTenant(c, caller.tenant);
  const month = toBudgetMonth(deps.now());
  const spentUsd = await deps.tenants.spentSince(tenant.id, Date.parse(`${month}-01T00:00:00Z`));
  return c.json({
    tenant: { id: tenant.id, name: tenant.name },
    key_id: caller.keyId,
    scopes: caller.scopes,
    limits: tenant.limits,
    key_rpm: caller.keyRpm,
    month,
    spent_usd: spentUsd,
  });
});
