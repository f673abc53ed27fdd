// Aggregates the D1 `ledger` for usage reports: one query per report, groups and totals together,
// medians by window functions (SQLite has no percentile). Takes only the D1 database.
import { z } from "zod";
import { UsageAggregateRowSchema, type UsageAggregateRow } from "../../src/core/usage-report.ts";
import type { UsageGroupBy, UsageReportQuery } from "../../src/core/usage-report-query.ts";

/**
 * Ledger rows one report reads at most. The medians sort every scanned row, and a D1 query has a
 * 30 s limit; a million rows is far inside it. Past the cap the report says `capped`.
 */
export const DEFAULT_MAX_SCANNED_CALLS = 1_000_000;

export interface UsageAggregates {
  groups: UsageAggregateRow[];
  totals: UsageAggregateRow;
}

export interface UsageReportStore {
  readonly maxCalls: number;
  aggregate(tenant: string, query: UsageReportQuery): Promise<UsageAggregates>;
}

/** SQL for each group key: fixed fragments, never built from request text. */
function toKeyExpression(groupBy: UsageGroupBy): string {
  switch (groupBy) {
    case "model":
      return "model";
    case "day":
      // created_at is epoch ms (INTEGER): integer division gives whole seconds for 'unixepoch'.
      return "strftime('%Y-%m-%d', created_at / 1000, 'unixepoch')";
    case "swarm":
      return "swarm_id";
    case "token":
      // Every row of a report is the caller's tenant's, so this is one group (kept under its old name, `token`).
      return "tenant";
  }
}

// A call without usage has every token column NULL (docs/data.md), so prompt_tokens marks it.
// Costs are summed as integer picodollars: cost_usd holds costOfUsage's picodollar value / 1e12.
const AGGREGATES = `
  COUNT(*) AS calls,
  COALESCE(SUM(status = 'error'), 0) AS errors,
  COALESCE(SUM(status = 'unknown'), 0) AS estimated_calls,
  SUM(prompt_tokens) AS prompt_tokens,
  SUM(cached_tokens) AS cached_tokens,
  SUM(completion_tokens) AS completion_tokens,
  SUM(reasoning_tokens) AS reasoning_tokens,
  SUM(total_tokens) AS total_tokens,
  COALESCE(SUM(prompt_tokens IS NULL), 0) AS missing_usage_calls,
  COALESCE(SUM(prompt_tokens IS NOT NULL AND cost_usd IS NULL), 0) AS unpriced_calls,
  SUM(CAST(ROUND(cost_usd * 1000000000000) AS INTEGER)) AS cost_pico`;

/**
 * `scoped` walks the ledger_by_tenant_time index in time order (no sort) up to the cap; `ranked`
 * numbers each call by latency within its group and overall; the nearest-rank median is the row
 * of rank ceil(n / 2) = (n + 1) / 2 (integer division), as `percentile(…, 50)` in core computes it.
 * The totals row (key NULL) is the same aggregate over every scanned call; no group key is NULL.
 * Exported so a test can check the plan uses the ledger_by_tenant_time index.
 */
export function toUsageReportSql(groupBy: UsageGroupBy): string {
  return `
WITH scoped AS (
  SELECT ${toKeyExpression(groupBy)} AS key, status, prompt_tokens, cached_tokens, completion_tokens,
         reasoning_tokens, total_tokens, cost_usd, latency_ms
  FROM ledger
  WHERE tenant = ?1 AND created_at >= ?2 AND created_at < ?3
  ORDER BY created_at
  LIMIT ?4
),
ranked AS (
  SELECT *,
    ROW_NUMBER() OVER (PARTITION BY key ORDER BY latency_ms) AS key_rank,
    COUNT(*) OVER (PARTITION BY key) AS key_calls,
    ROW_NUMBER() OVER (ORDER BY latency_ms) AS all_rank,
    COUNT(*) OVER () AS all_calls
  FROM scoped
)
SELECT key, ${AGGREGATES},
  MAX(CASE WHEN key_rank = (key_calls + 1) / 2 THEN latency_ms END) AS p50_latency_ms
FROM ranked GROUP BY key
UNION ALL
SELECT NULL AS key, ${AGGREGATES},
  MAX(CASE WHEN all_rank = (all_calls + 1) / 2 THEN latency_ms END) AS p50_latency_ms
FROM ranked
ORDER BY 1`;
}

export function createUsageReportStore(db: D1Database, maxCalls: number = DEFAULT_MAX_SCANNED_CALLS): UsageReportStore {
  return {
    maxCalls,
    async aggregate(tenant, query) {
      const { results } = await db.prepare(toUsageReportSql(query.groupBy)).bind(tenant, query.from, query.to, maxCalls).all();
      const rows = z.array(UsageAggregateRowSchema).parse(results);
      const totals = rows.find((row) => row.key === null);
      // An aggregate without GROUP BY always yields one row, even over no calls.
      if (totals === undefined) throw new Error("usage report query returned no totals row");
      return { groups: rows.filter((row) => row.key !== null), totals };
    },
  };
}
