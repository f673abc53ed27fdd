import { describe, expect, it } from "vitest";
import { capOfTenant, parseTenantBudgets, toBudgetMonth } from "./tenant-budget.ts";

describe("tenant budgets", () => {
  it("parses caps per tenant with a default for the rest", () => {
    const parsed = parseTenantBudgets('{"tk_0123456789abcdef":{"max_usd_per_month":50},"*":{"max_tokens_per_month":1000000}}');
    if (!parsed.ok) throw new Error(parsed.error);
    expect(capOfTenant(parsed.value, "tk_0123456789abcdef")).toEqual({ max_usd_per_month: 50 });
    expect(capOfTenant(parsed.value, "tk_ffffffffffffffff")).toEqual({ max_tokens_per_month: 1_000_000 });
    expect(capOfTenant({}, "tk_ffffffffffffffff")).toBeNull();
    expect(parseTenantBudgets("")).toEqual({ ok: true, value: {} });
  });

  it.each([
    ["not JSON", "{", "not valid JSON"],
    ["a key that is no tenant id", '{"team-a":{"max_usd_per_month":1}}', "team-a: \"team-a\" is not a tenant id"],
    ["an empty cap", '{"*":{}}', "*: give max_usd_per_month or max_tokens_per_month"],
    ["a negative cap", '{"*":{"max_usd_per_month":-1}}', "*.max_usd_per_month"],
  ])("refuses %s", (_label, text, fragment) => {
    const parsed = parseTenantBudgets(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toContain(fragment);
  });

  it.each([
    [Date.UTC(2026, 10, 30, 23, 59, 59), "2026-11"],
    [Date.UTC(2026, 11, 1, 0, 0, 0), "2026-12"],
  ])("counts %i in month %s (UTC)", (ms, month) => {
    expect(toBudgetMonth(ms)).toBe(month);
  });
});
