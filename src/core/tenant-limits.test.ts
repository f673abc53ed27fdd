import { describe, expect, it } from "vitest";
import { checkTenantLimits, mergeTenantLimits, TenantLimitsSchema, toTenantCap, type TenantLimits } from "./tenant-limits.ts";

const spec = (overrides: Record<string, unknown> = {}) => ({ model: "mock-1", ...overrides }) as Parameters<typeof checkTenantLimits>[0];

describe("tenant limits", () => {
  it.each([
    [{}, true],
    [{ rpm: 60, max_concurrent_swarms: 3, max_tasks_per_swarm: 500, monthly_usd: 12.5, models: ["a"] }, true],
    [{ rpm: 0 }, false],
    [{ rpm: 1.5 }, false],
    [{ monthly_usd: 0 }, false],
    [{ models: [] }, false],
    [{ burst: 5 }, false],
  ])("schema %j → %s", (limits, valid) => {
    expect(TenantLimitsSchema.safeParse(limits).success).toBe(valid);
  });

  it.each<[TenantLimits, Record<string, unknown>, TenantLimits]>([
    [{ rpm: 60 }, { rpm: 120 }, { rpm: 120 }],
    [{ rpm: 60, monthly_usd: 5 }, { monthly_usd: null }, { rpm: 60 }],
    [{ rpm: 60 }, { models: ["m"] }, { rpm: 60, models: ["m"] }],
    [{ rpm: 60 }, {}, { rpm: 60 }],
  ])("merges %j with %j", (current, patch, expected) => {
    expect(mergeTenantLimits(current, patch)).toEqual(expected);
  });

  it.each<[string, Parameters<typeof checkTenantLimits>[0], number | null, TenantLimits, string[]]>([
    ["no limits", spec(), 5, {}, []],
    ["within max_tasks_per_swarm", spec(), 5, { max_tasks_per_swarm: 5 }, []],
    ["over max_tasks_per_swarm", spec(), 6, { max_tasks_per_swarm: 5 }, ["tasks"]],
    ["a goal whose planner may plan more", spec({ goal: "g" }), null, { max_tasks_per_swarm: 5 }, ["planner.max_tasks"]],
    ["a goal planning few enough", spec({ goal: "g", planner: { max_tasks: 5 } }), null, { max_tasks_per_swarm: 5 }, []],
    ["an allowed model", spec(), 1, { models: ["mock-1"] }, []],
    ["a model not allowed", spec({ model: "gpt-4.1" }), 1, { models: ["mock-1"] }, ["model"]],
    ["a fallback not allowed", spec({ fallback: ["mock-1", "gpt-4.1"] }), 1, { models: ["mock-1"] }, ["fallback.1"]],
    [
      "a mix, a planner and a reducer not allowed",
      spec({
        model: [
          { model: "mock-1", weight: 1 },
          { model: "x", weight: 1 },
        ],
        planner: { model: "p" },
        reduce: { kind: "llm", model: "r" },
      }),
      1,
      { models: ["mock-1"] },
      ["model.1.model", "planner.model", "reduce.model"],
    ],
  ])("%s", (_, s, taskCount, limits, paths) => {
    expect(checkTenantLimits(s, taskCount, limits).map((d) => d.path)).toEqual(paths);
  });

  it.each([
    [{}, null, null],
    [{}, { max_tokens_per_month: 10 }, { max_tokens_per_month: 10 }],
    [{ monthly_usd: 5 }, null, { max_usd_per_month: 5 }],
    [{ monthly_usd: 5 }, { max_usd_per_month: 50, max_tokens_per_month: 10 }, { max_usd_per_month: 5, max_tokens_per_month: 10 }],
  ])("the cap of %j over TENANT_BUDGETS %j is %j", (limits, configured, cap) => {
    expect(toTenantCap(limits, configured)).toEqual(cap);
  });
});
