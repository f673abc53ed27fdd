// The ledger aggregate query against local D1: the scan cap and the index it walks.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createUsageReportStore, toUsageReportSql } from "../usage-report-store.ts";
import { seedLedger } from "./seed-ledger.ts";

const at = (iso: string) => Date.parse(iso);

describe("usage report store", () => {
  it.each(["model", "day", "swarm", "token"] as const)("walks ledger_by_tenant_time for group_by=%s", async (groupBy) => {
    const plan = await env.LEDGER_DB.prepare(`EXPLAIN QUERY PLAN ${toUsageReportSql(groupBy)}`)
      .bind("tk_plan", 0, 1, 10)
      .all();
    const rows = z.array(z.object({ id: z.number(), parent: z.number(), detail: z.string() })).parse(plan.results);
    const search = rows.find((row) => row.detail.includes("ledger"));
    expect(search?.detail).toBe("SEARCH ledger USING INDEX ledger_by_tenant_time (tenant=? AND created_at>? AND created_at<?)");
    // The scoped rows come in time order from the index: no sort step for their ORDER BY created_at.
    const sorts = rows.filter((row) => row.parent === search?.parent && row.detail.startsWith("USE TEMP B-TREE"));
    expect(sorts).toEqual([]);
    // `ranked` is computed once and read twice (groups, totals), not evaluated per branch.
    expect(rows.filter((row) => row.detail === "MATERIALIZE ranked")).toHaveLength(1);
  });

  it("reads at most maxCalls rows, the earliest of the range, and says it was capped", async () => {
    const tenant = "tk_cap0000000000000";
    await seedLedger(
      [1, 2, 3, 4, 5].map((n) => ({
        tenant,
        call_id: `sw_cap:t${n}:1:1`,
        swarm_id: "sw_cap",
        model: "m",
        created_at: at(`2025-05-0${n}T00:00:00Z`),
        prompt_tokens: n,
        completion_tokens: 0,
        total_tokens: n,
      })),
    );
    const store = createUsageReportStore(env.LEDGER_DB, 3);
    const query = { from: at("2025-05-01"), to: at("2025-06-01"), groupBy: "model" as const };
    const { totals, groups } = await store.aggregate(tenant, query);
    expect(store.maxCalls).toBe(3);
    expect(totals.calls).toBe(3);
    expect(totals.prompt_tokens).toBe(1 + 2 + 3);
    expect(groups.map((g) => [g.key, g.calls])).toEqual([["m", 3]]);

    const uncapped = await createUsageReportStore(env.LEDGER_DB, 5).aggregate(tenant, query);
    expect(uncapped.totals.prompt_tokens).toBe(15);
  });
});
