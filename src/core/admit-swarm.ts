// Start-time admission: whether the engine can honour a valid spec as configured — every model
// served by the gateway, a fallback tier some gateway model has, a price for every model when a
// USD budget (the swarm's or its tenant's monthly cap) must hold. The orchestrator asks before any
// SwarmRoom exists; the room asks again (defence in depth), so both refuse with the same words. No I/O.
import type { ErrorDetail } from "./errors.ts";
import { resolveModelRoute, type GatewayConfig } from "./gateway-config.ts";
import { resolvePrice, type PriceTable } from "./pricing.ts";
import { err, ok, type Result } from "./result.ts";
import { toModelMix } from "./route-model.ts";
import type { SwarmSpec } from "./spec-schema.ts";
import type { TenantCap } from "./tenant-budget.ts";

/** What a spec is admitted against. */
export interface AdmissionContext {
  /** The gateway's models when one is configured; null = every model name is served. */
  gateway: GatewayConfig | null;
  prices: PriceTable;
  /** The swarm's tenant's monthly cap; null = uncapped. */
  tenantCap: TenantCap | null;
}

export type AdmittedSpec = Pick<SwarmSpec, "model" | "fallback" | "planner" | "reduce" | "budget" | "goal">;

/** The first kind of refusal that applies, with one detail per offending field or model. */
export function admitSwarm(spec: AdmittedSpec, context: AdmissionContext): Result<void, ErrorDetail[]> {
  const { gateway } = context;
  if (gateway !== null) {
    // Every model must be one the gateway can route, or the tasks would fail one by one.
    const unknown = namedModels(spec).filter(({ model }) => resolveModelRoute(gateway, model) === null);
    if (unknown.length > 0) {
      const served = Object.keys(gateway.models).join(", ") || "none";
      return err(unknown.map(({ path, model }) => ({ path, message: `model "${model}" is not served by the gateway (models: ${served})` })));
    }
  }
  const tier = spec.budget?.fallback_tier;
  if (tier !== undefined && (gateway === null || !Object.values(gateway.models).some((m) => m.tier === tier))) {
    const tiers = gateway === null ? [] : [...new Set(Object.values(gateway.models).flatMap((m) => (m.tier === undefined ? [] : [m.tier])))];
    return err([
      {
        path: "budget.fallback_tier",
        message: `no gateway model has tier "${tier}" (tiers: ${tiers.join(", ") || "none — configure GATEWAY_CONFIG models with a tier"})`,
      },
    ]);
  }
  if (spec.budget?.max_usd !== undefined || context.tenantCap?.max_usd_per_month !== undefined) {
    // A USD budget (the swarm's or the tenant's) can only hold if every call has a price.
    const unpriced = callModels(spec).filter((m) => resolvePrice(context.prices, m) === null);
    if (unpriced.length > 0) {
      const path = spec.budget?.max_usd !== undefined ? "budget.max_usd" : "model";
      return err(
        unpriced.map((model) => ({
          path,
          message: `model "${model}" has no price, so a USD budget cannot be enforced (add it to MODEL_PRICES or use budget.max_tokens)`,
        })),
      );
    }
  }
  return ok(undefined);
}

/** Every model the spec names, at the path where it names it. */
/** Every model a spec names, with the field that names it (the one a 400 points at). */
export function namedModels(spec: AdmittedSpec): { path: string; model: string }[] {
  return [
    ...(typeof spec.model === "string" ? [{ path: "model", model: spec.model }] : spec.model.map((m, i) => ({ path: `model.${i}.model`, model: m.model }))),
    ...(spec.fallback ?? []).map((model, i) => ({ path: `fallback.${i}`, model })),
    ...(spec.planner?.model !== undefined ? [{ path: "planner.model", model: spec.planner.model }] : []),
    ...(spec.reduce?.kind === "llm" && spec.reduce.model !== undefined ? [{ path: "reduce.model", model: spec.reduce.model }] : []),
  ];
}

/**
 * Every model a call of the swarm may go to, once each: the mix, the fallbacks, and the planner's
 * and the llm reducer's (their own, or the first of the mix) — the room's `engineModels`.
 */
function callModels(spec: AdmittedSpec): string[] {
  const mix = toModelMix(spec.model).map((m) => m.model);
  const first = mix[0] ?? "";
  return [
    ...new Set([
      ...mix,
      ...(spec.fallback ?? []),
      ...(spec.goal !== undefined ? [spec.planner?.model ?? first] : []),
      ...(spec.reduce?.kind === "llm" ? [spec.reduce.model ?? first] : []),
    ]),
  ];
}
