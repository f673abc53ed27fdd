// Monthly budgets per API token (tenant): the TENANT_BUDGETS setting, the month a swarm counts in,
// and the most a whole swarm can cost, which it reserves against its tenant's month. No I/O.
import { z } from "zod";
import { toIssuePath } from "./errors.ts";
import { err, ok, type Result } from "./result.ts";

export const TenantCapSchema = z
  .strictObject({
    max_usd_per_month: z.number().positive().optional(),
    max_tokens_per_month: z.number().int().positive().optional(),
  })
  .refine((c) => c.max_usd_per_month !== undefined || c.max_tokens_per_month !== undefined, "give max_usd_per_month or max_tokens_per_month");
export type TenantCap = z.infer<typeof TenantCapSchema>;

/** Tenant id (`tk_` + 16 hex of the token's SHA-256) → its cap; `*` applies to every other tenant. */
export const TenantBudgetsSchema = z.record(z.string(), TenantCapSchema).superRefine((budgets, ctx) => {
  for (const key of Object.keys(budgets)) {
    if (!/^(\*|tk_[0-9a-f]{16})$/.test(key)) {
      ctx.addIssue({ code: "custom", path: [key], message: `"${key}" is not a tenant id (tk_ + the first 16 hex chars of the token's SHA-256) or *` });
    }
  }
});
export type TenantBudgets = z.infer<typeof TenantBudgetsSchema>;

export function parseTenantBudgets(text: string | undefined): Result<TenantBudgets, string> {
  const raw = (text ?? "").trim();
  if (raw === "") return ok({});
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return err("TENANT_BUDGETS is not valid JSON");
  }
  const parsed = TenantBudgetsSchema.safeParse(json);
  if (!parsed.success) return err(`TENANT_BUDGETS: ${parsed.error.issues.map((i) => `${toIssuePath(i.path)}: ${i.message}`).join("; ")}`);
  return ok(parsed.data);
}

export function capOfTenant(budgets: TenantBudgets, tenant: string): TenantCap | null {
  return budgets[tenant] ?? budgets["*"] ?? null;
}

/** `2026-11`: a swarm counts against the UTC month it started in. */
export function toBudgetMonth(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 7);
}
