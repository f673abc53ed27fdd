// A tenant's limits (shared by all of its keys): their schema, a PATCH merged over them, what they
// refuse in a swarm spec at submit, and the monthly cap they give TenantBudget. No I/O.
import { z } from "zod";
import type { ErrorDetail } from "./errors.ts";
import { namedModels, type AdmittedSpec } from "./admit-swarm.ts";
import { PlannerSpecSchema } from "./spec-schema.ts";
import type { TenantCap } from "./tenant-budget.ts";

const MAX_RPM = 1_000_000;

export const TenantLimitsSchema = z.strictObject({
  /** API requests a minute, all of the tenant's keys together. */
  rpm: z.number().int().min(1).max(MAX_RPM).optional(),
  /** Swarms planning, running or reducing at once. */
  max_concurrent_swarms: z.number().int().min(1).max(100_000).optional(),
  max_tasks_per_swarm: z.number().int().min(1).max(1_000_000).optional(),
  /** USD a UTC month, enforced by TenantBudget as the worst case is reserved. */
  monthly_usd: z.number().positive().max(1e9).optional(),
  /** The model names the tenant's swarms may use (planner, reducer and fallbacks included). */
  models: z.array(z.string().min(1).max(200)).min(1).max(200).optional(),
});
export type TenantLimits = z.infer<typeof TenantLimitsSchema>;

/** PATCH: a field set replaces that limit, `null` removes it, an absent field keeps it. */
export const TenantLimitsPatchSchema = z.strictObject({
  rpm: TenantLimitsSchema.shape.rpm.nullable(),
  max_concurrent_swarms: TenantLimitsSchema.shape.max_concurrent_swarms.nullable(),
  max_tasks_per_swarm: TenantLimitsSchema.shape.max_tasks_per_swarm.nullable(),
  monthly_usd: TenantLimitsSchema.shape.monthly_usd.nullable(),
  models: TenantLimitsSchema.shape.models.nullable(),
});
export type TenantLimitsPatch = z.infer<typeof TenantLimitsPatchSchema>;

/** A key's own rpm: at most the tenant's maximum; the tenant's rpm applies on top. */
export const KeyRpmSchema = z.number().int().min(1).max(MAX_RPM);

export function mergeTenantLimits(current: TenantLimits, patch: TenantLimitsPatch): TenantLimits {
  const merged: Record<string, unknown> = { ...current };
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete merged[name];
    else if (value !== undefined) merged[name] = value;
  }
  return TenantLimitsSchema.parse(merged);
}

/**
 * What the tenant's limits refuse in a spec (400 invalid_spec naming the field): more tasks than
 * `max_tasks_per_swarm`, a model not in `models`. `taskCount` is null for a goal not yet planned
 * (the planner's `max_tasks` is then judged instead).
 */
export function checkTenantLimits(spec: AdmittedSpec, taskCount: number | null, limits: TenantLimits): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const maxTasks = limits.max_tasks_per_swarm;
  if (maxTasks !== undefined) {
    if (taskCount !== null && taskCount > maxTasks) {
      problems.push({ path: "tasks", message: `the tenant allows at most ${maxTasks} tasks a swarm (max_tasks_per_swarm); this spec has ${taskCount}` });
    } else if (taskCount === null && PlannerSpecSchema.parse(spec.planner ?? {}).max_tasks > maxTasks) {
      problems.push({
        path: "planner.max_tasks",
        message: `the tenant allows at most ${maxTasks} tasks a swarm (max_tasks_per_swarm): set planner.max_tasks to ${maxTasks} or less`,
      });
    }
  }
  const allowed = limits.models;
  if (allowed !== undefined) {
    const allowedSet = new Set(allowed);
    for (const { path, model } of namedModels(spec)) {
      if (!allowedSet.has(model)) problems.push({ path, message: `model "${model}" is not allowed for this tenant (models: ${allowed.join(", ")})` });
    }
  }
  return problems;
}

/** The tenant's monthly cap: `monthly_usd` over the TENANT_BUDGETS cap (which may cap tokens too); null = uncapped. */
export function toTenantCap(limits: TenantLimits, configured: TenantCap | null): TenantCap | null {
  if (limits.monthly_usd === undefined) return configured;
  return { ...(configured ?? {}), max_usd_per_month: limits.monthly_usd };
}
