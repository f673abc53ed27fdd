// /v1/usage: the caller's usage report from the D1 ledger, grouped by model, day, swarm or token.
// Thin: the query is parsed and the rows shaped in core; the aggregate query lives in the store.
import { Hono } from "hono";
import { ApiError } from "../../../src/core/errors.ts";
import { toUsageReport } from "../../../src/core/usage-report.ts";
import { parseUsageReportQuery } from "../../../src/core/usage-report-query.ts";
import type { AppEnv } from "../app-env.ts";

export const usageRoutes = new Hono<AppEnv>().get("/", async (c) => {
  const { deps, tenant } = c.var;
  const query = parseUsageReportQuery(c.req.query(), deps.now());
  if (!query.ok) throw new ApiError("invalid_request", "invalid query parameters", query.error);
  const aggregates = await deps.usageReports.aggregate(tenant, query.value);
  return c.json(toUsageReport(query.value, aggregates, deps.usageReports.maxCalls));
});
