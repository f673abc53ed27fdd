// Monthly budgets per tenant: the shape of the TENANT_BUDGETS setting (read by
// env-settings.ts), a tenant's cap, and the month a swarm counts in. No I/O.
import { z } from "zod";

export const TenantCapSchema = z
  .strictObject({
    max_usd_per_month: z.number().positive().optional(),
    max_tokens_per_month: z.number().int().positive().optional(),
  })
  .refine((c) => c.max_usd_per_month !== undefined || c.max_tokens_per_month !== undefined, "give max_usd_per_month or max_tokens_per_month");
export type TenantCap = z.infer<typeof TenantCapSchema>;

/** Tenant id (`tn_…`) → its cap; `*` applies to every other tenant. A tenant's `monthly_usd` limit overrides the USD cap. */
export const TenantBudgetsSchema = z.record(z.string(), TenantCapSchema).superRefine((budgets, ctx) => {
  for (const key of Object.keys(budgets)) {
    if (!/^(\*|tn_[a-z0-9]{1,40})$/.test(key)) {
      ctx.addIssue({ code: "custom", path: [key], message: `"${key}" is not a tenant id (tn_…) or *` });
    }
  }
});
export type TenantBudgets = z.infer<typeof TenantBudgetsSchema>;

export function capOfTenant(budgets: TenantBudgets, tenant: string): TenantCap | null {
  return budgets[tenant] ?? budgets["*"] ?? null;
}

/** `2026-11`: a swarm counts against the UTC month it started in. */
export function toBudgetMonth(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 7);
}
