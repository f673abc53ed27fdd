import { describe, expect, it } from "vitest";
import { capOfTenant, toBudgetMonth } from "./tenant-budget.ts";

describe("tenant budgets", () => {
  it("gives a tenant its own cap, else the * cap, else none", () => {
    const budgets = { tn_0123456789abcdef: { max_usd_per_month: 50 }, "*": { max_tokens_per_month: 1_000_000 } };
    expect(capOfTenant(budgets, "tn_0123456789abcdef")).toEqual({ max_usd_per_month: 50 });
    expect(capOfTenant(budgets, "tn_ffffffffffffffff")).toEqual({ max_tokens_per_month: 1_000_000 });
    expect(capOfTenant({}, "tn_ffffffffffffffff")).toBeNull();
  });

  it.each([
    [Date.UTC(2026, 10, 30, 23, 59, 59), "2026-11"],
    [Date.UTC(2026, 11, 1, 0, 0, 0), "2026-12"],
  ])("counts %i in month %s (UTC)", (ms, month) => {
    expect(toBudgetMonth(ms)).toBe(month);
  });
});
