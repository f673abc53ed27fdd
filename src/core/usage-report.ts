// The GET /v1/usage answer: ledger aggregates (one row per group plus the totals) shaped into
// report rows with error rates, exact costs and honest gaps. No I/O.
// A call without upstream usage is counted in `missing_usage_calls`, never summed as zero tokens.
import { z } from "zod";
import type { UsageGroupBy, UsageReportQuery } from "./usage-report-query.ts";

const count = z.number().int().nonnegative();

/**
 * One aggregate row as the ledger query returns it. `key` is null on the totals row. Token sums
 * are null when no call of the group reported usage (SQL SUM over NULLs); `cost_pico` is the sum
 * of the calls' `cost_usd` in integer picodollars, so the sum is exact.
 */
export const UsageAggregateRowSchema = z.object({
  key: z.string().nullable(),
  calls: count,
  errors: count,
  estimated_calls: count,
  prompt_tokens: count.nullable(),
  cached_tokens: count.nullable(),
  completion_tokens: count.nullable(),
  reasoning_tokens: count.nullable(),
  total_tokens: count.nullable(),
  missing_usage_calls: count,
  unpriced_calls: count,
  cost_pico: z.number().int().nullable(),
  p50_latency_ms: z.number().nullable(),
});
export type UsageAggregateRow = z.infer<typeof UsageAggregateRowSchema>;

export interface UsageFigures {
  calls: number;
  /** Sums over the calls that reported usage; null when none did. */
  prompt_tokens: number | null;
  cached_tokens: number | null;
  completion_tokens: number | null;
  reasoning_tokens: number | null;
  total_tokens: number | null;
  /** Sum over the calls with a cost; null when none had one. */
  cost_usd: number | null;
  /** Calls with status `error` / calls; null for no calls. */
  error_rate: number | null;
  /** Nearest-rank median of the calls' latency; null for no calls. */
  p50_latency_ms: number | null;
  /** Calls whose upstream sent no usage: in `calls`, not in the token sums or the cost. */
  missing_usage_calls: number;
  /** Calls with usage but no price for their model: in the token sums, not in the cost. */
  unpriced_calls: number;
  /**
   * Calls whose outcome died with their lane (ledger status `unknown`): in `calls`, and in the
   * sums at their worst case (prompt estimate + max_tokens), so the sums are an upper bound.
   */
  estimated_calls: number;
}

export interface UsageReportRow extends UsageFigures {
  key: string;
}

export interface UsageReport {
  from: string;
  to: string;
  group_by: UsageGroupBy;
  rows: UsageReportRow[];
  totals: UsageFigures;
  /**
   * The report reads at most `max_calls` ledger rows (the earliest of the range); `capped` says the
   * cap was reached, so later calls of the range may be left out: narrow from/to.
   */
  scan: { max_calls: number; capped: boolean };
}

export function toUsageFigures(row: UsageAggregateRow): UsageFigures {
  return {
    calls: row.calls,
    prompt_tokens: row.prompt_tokens,
    cached_tokens: row.cached_tokens,
    completion_tokens: row.completion_tokens,
    reasoning_tokens: row.reasoning_tokens,
    total_tokens: row.total_tokens,
    cost_usd: row.cost_pico === null ? null : row.cost_pico / 1e12,
    error_rate: row.calls === 0 ? null : row.errors / row.calls,
    p50_latency_ms: row.calls === 0 ? null : row.p50_latency_ms,
    missing_usage_calls: row.missing_usage_calls,
    unpriced_calls: row.unpriced_calls,
    estimated_calls: row.estimated_calls,
  };
}

/**
 * Shapes the aggregates of `query` into the report. `groups` are the keyed rows (kept in their
 * order), `totals` the row over every scanned call, `maxCalls` the scan cap the query used.
 */
export function toUsageReport(
  query: UsageReportQuery,
  aggregates: { groups: readonly UsageAggregateRow[]; totals: UsageAggregateRow },
  maxCalls: number,
): UsageReport {
  const rows: UsageReportRow[] = [];
  for (const group of aggregates.groups) {
    if (group.key !== null) rows.push({ key: group.key, ...toUsageFigures(group) });
  }
  return {
    from: new Date(query.from).toISOString(),
    to: new Date(query.to).toISOString(),
    group_by: query.groupBy,
    rows,
    totals: toUsageFigures(aggregates.totals),
    scan: { max_calls: maxCalls, capped: aggregates.totals.calls >= maxCalls },
  };
}
