// GET /v1/audit: the audit trail, newest first (admin scope). An operator reads every tenant's
// (or one's, with tenant_id); another tenant's admin reads its own tenant's only.
import { Hono } from "hono";
import { AuditQuerySchema } from "../../../src/core/tenant-requests.ts";
import type { AppEnv } from "../app-env.ts";
import { parseQuery } from "../parse-query.ts";
import { requireVisibleTenant } from "../tenant-access.ts";
import { toAuditView } from "../tenant-views.ts";

export const auditRoutes = new Hono<AppEnv>().get("/", async (c) => {
  const { caller, deps } = c.var;
  const query = parseQuery(c, AuditQuerySchema);
  if (query.tenant_id !== undefined) await requireVisibleTenant(c, query.tenant_id);
  const tenantId = query.tenant_id ?? (caller.operator ? null : caller.tenant);
  const page = await deps.audit.list({ tenantId, before: query.cursor ?? null, limit: query.limit });
  return c.json({ events: page.events.map(toAuditView), next_cursor: page.next });
});
