// /v1/usage: the caller's usage report from the D1 ledger, grouped by model, day, swarm or tenant.
// Thin: the query is parsed and the rows shaped in core; the aggregate query lives in the store.
// An operator (an admin key of the default tenant) may name another tenant with `tenant_id`.
import { Hono } from "hono";
import { ApiError } from "../../../src/core/errors.ts";
import { toUsageReport } from "../../../src/core/usage-report.ts";
import { parseUsageReportQuery } from "../../../src/core/usage-report-query.ts";
import type { AppEnv } from "../app-env.ts";
import { requireVisibleTenant } from "../tenant-access.ts";

export const usageRoutes = new Hono<AppEnv>().get("/", async (c) => {
  const { deps, tenant } = c.var;
  const { tenant_id: tenantId, ...params } = c.req.query();
  const query = parseUsageReportQuery(params, deps.now());
  if (!query.ok) throw new ApiError("invalid_request", "invalid query parameters", query.error);
  const of = tenantId === undefined ? tenant : (await requireVisibleTenant(c, tenantId)).id;
  const aggregates = await deps.usageReports.aggregate(of, query.value);
  return c.json(toUsageReport(query.value, aggregates, deps.usageReports.maxCalls));
});
