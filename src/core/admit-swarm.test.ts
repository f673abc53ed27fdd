import { describe, expect, it } from "vitest";
import { admitSwarm, type AdmissionContext } from "./admit-swarm.ts";
import type { ErrorDetail } from "./errors.ts";
import type { GatewayConfig } from "./gateway-config.ts";
import { DEFAULT_PRICES, type PriceTable } from "./pricing.ts";
import { SwarmSpecSchema } from "./spec-schema.ts";

/** A valid spec as the orchestrator hands it on (schema defaults filled, tasks apart). */
function spec(fields: Record<string, unknown>) {
  const { tasks: _tasks, ...parsed } = SwarmSpecSchema.parse({
    name: "s",
    model: "gpt-4.1",
    ...(fields.goal === undefined ? { tasks: [{ prompt: "x" }] } : {}),
    ...fields,
  });
  return parsed;
}

const upstreams = { main: { base_url: "https://llm.example.com/v1", keys: [{ id: "k" }] } };
/** Serves only the models it lists. */
const listed: GatewayConfig = {
  upstreams,
  models: {
    "gpt-4.1": { upstream: "main", tier: "premium" },
    "deepseek-v3.2": { upstream: "main", tier: "economy" },
    "in-house": { upstream: "main", tier: "economy" },
  },
};
/** Serves every model (a default upstream), with no tiers. */
const open: GatewayConfig = { upstreams, models: {}, default_upstream: "main" };
/** Lists no model and has no default upstream: serves nothing. */
const closed: GatewayConfig = { upstreams, models: {} };

const prices: PriceTable = DEFAULT_PRICES;
const none: AdmissionContext = { gateway: null, prices, tenantCap: null };
const notServed = (model: string, models = "gpt-4.1, deepseek-v3.2, in-house") => `model "${model}" is not served by the gateway (models: ${models})`;
const noPrice = (model: string) => `model "${model}" has no price, so a USD budget cannot be enforced (add it to MODEL_PRICES or use budget.max_tokens)`;

describe("admitSwarm", () => {
  it.each<[string, ReturnType<typeof spec>, AdmissionContext]>([
    ["any model without a gateway or a USD budget", spec({ model: "in-house", fallback: ["other"] }), none],
    [
      "models the gateway lists",
      spec({
        model: [
          { model: "gpt-4.1", weight: 2 },
          { model: "deepseek-v3.2", weight: 1 },
        ],
        fallback: ["in-house"],
      }),
      { ...none, gateway: listed },
    ],
    ["any model through a default upstream", spec({ model: "in-house", fallback: ["elsewhere"] }), { ...none, gateway: open }],
    [
      "a planner model and an llm reducer model the gateway lists",
      spec({ goal: "g", planner: { model: "deepseek-v3.2" }, reduce: { kind: "llm", model: "in-house" } }),
      { ...none, gateway: listed },
    ],
    ["a fallback tier some gateway model has", spec({ budget: { max_tokens: 1_000, fallback_tier: "economy" } }), { ...none, gateway: listed }],
    ["a token budget over a model without a price", spec({ model: "in-house", budget: { max_tokens: 1_000 } }), none],
    ["a tenant's token cap over a model without a price", spec({ model: "in-house" }), { ...none, tenantCap: { max_tokens_per_month: 1_000 } }],
    [
      "a USD budget over priced models, a dated model priced by its prefix",
      spec({ model: "gpt-4.1-2025-04-14", fallback: ["claude-sonnet-4.5@20250929"], budget: { max_usd: 1 } }),
      none,
    ],
    [
      "a USD budget with a priced planner and reducer",
      spec({ goal: "g", planner: { model: "kimi-k2.5" }, reduce: { kind: "llm", model: "deepseek-v3.2" }, budget: { max_usd: 1 } }),
      none,
    ],
    ["a tenant's USD cap over priced models", spec({ model: "mock-1" }), { ...none, tenantCap: { max_usd_per_month: 5 } }],
    [
      "a USD budget over a model MODEL_PRICES adds",
      spec({ model: "in-house", budget: { max_usd: 1 } }),
      { ...none, prices: { ...prices, "in-house": { input: 1, cached_input: 0.1, output: 2 } } },
    ],
    ["an unpriced reducer model when the reduction is by code", spec({ reduce: { kind: "collect" }, budget: { max_usd: 1 } }), none],
  ])("admits %s", (_label, given, context) => {
    expect(admitSwarm(given, context)).toEqual({ ok: true, value: undefined });
  });

  it.each<[string, ReturnType<typeof spec>, AdmissionContext, ErrorDetail[]]>([
    ["a model the gateway does not serve", spec({ model: "gpt-9" }), { ...none, gateway: listed }, [{ path: "model", message: notServed("gpt-9") }]],
    [
      "models of a mix the gateway does not serve",
      spec({
        model: [
          { model: "gpt-4.1", weight: 1 },
          { model: "gpt-9", weight: 1 },
          { model: "gpt-10", weight: 1 },
        ],
      }),
      { ...none, gateway: listed },
      [
        { path: "model.1.model", message: notServed("gpt-9") },
        { path: "model.2.model", message: notServed("gpt-10") },
      ],
    ],
    [
      "a fallback the gateway does not serve",
      spec({ fallback: ["deepseek-v3.2", "gpt-9"] }),
      { ...none, gateway: listed },
      [{ path: "fallback.1", message: notServed("gpt-9") }],
    ],
    [
      "a planner model the gateway does not serve",
      spec({ goal: "g", planner: { model: "gpt-9" } }),
      { ...none, gateway: listed },
      [{ path: "planner.model", message: notServed("gpt-9") }],
    ],
    [
      "an llm reducer model the gateway does not serve",
      spec({ reduce: { kind: "llm", model: "gpt-9" } }),
      { ...none, gateway: listed },
      [{ path: "reduce.model", message: notServed("gpt-9") }],
    ],
    [
      "every unserved model at once, before a bad fallback tier or a missing price",
      spec({ model: "gpt-9", fallback: ["gpt-10"], budget: { max_usd: 1, fallback_tier: "bargain" } }),
      { ...none, gateway: listed },
      [
        { path: "model", message: notServed("gpt-9") },
        { path: "fallback.0", message: notServed("gpt-10") },
      ],
    ],
    [
      "a model when the gateway serves none",
      spec({ model: "gpt-4.1" }),
      { ...none, gateway: closed },
      [{ path: "model", message: notServed("gpt-4.1", "none") }],
    ],
    [
      "a fallback tier no gateway model has",
      spec({ budget: { max_usd: 1, fallback_tier: "bargain" } }),
      { ...none, gateway: listed },
      [{ path: "budget.fallback_tier", message: 'no gateway model has tier "bargain" (tiers: premium, economy)' }],
    ],
    [
      "a fallback tier when the gateway's models have no tiers",
      spec({ budget: { max_tokens: 1_000, fallback_tier: "economy" } }),
      { ...none, gateway: open },
      [{ path: "budget.fallback_tier", message: 'no gateway model has tier "economy" (tiers: none — configure GATEWAY_CONFIG models with a tier)' }],
    ],
    [
      "a fallback tier without a gateway",
      spec({ budget: { max_tokens: 1_000, fallback_tier: "economy" } }),
      none,
      [{ path: "budget.fallback_tier", message: 'no gateway model has tier "economy" (tiers: none — configure GATEWAY_CONFIG models with a tier)' }],
    ],
    [
      "a fallback tier before a missing price",
      spec({ model: "in-house", budget: { max_usd: 1, fallback_tier: "bargain" } }),
      { ...none, gateway: listed },
      [{ path: "budget.fallback_tier", message: 'no gateway model has tier "bargain" (tiers: premium, economy)' }],
    ],
    [
      "a USD budget over a model without a price",
      spec({ model: "in-house", budget: { max_usd: 1 } }),
      none,
      [{ path: "budget.max_usd", message: noPrice("in-house") }],
    ],
    [
      "a USD budget over unpriced models of a mix and fallbacks, each named once",
      spec({
        model: [
          { model: "in-house", weight: 1 },
          { model: "gpt-4.1", weight: 1 },
        ],
        fallback: ["in-house", "spare"],
        budget: { max_usd: 1 },
      }),
      none,
      [
        { path: "budget.max_usd", message: noPrice("in-house") },
        { path: "budget.max_usd", message: noPrice("spare") },
      ],
    ],
    [
      "a USD budget over an unpriced planner model",
      spec({ goal: "g", planner: { model: "in-house" }, budget: { max_usd: 1 } }),
      none,
      [{ path: "budget.max_usd", message: noPrice("in-house") }],
    ],
    [
      "a USD budget over an unpriced llm reducer model",
      spec({ reduce: { kind: "llm", model: "in-house" }, budget: { max_usd: 1 } }),
      none,
      [{ path: "budget.max_usd", message: noPrice("in-house") }],
    ],
    [
      "a USD budget over an unpriced model that a goal's planner and an llm reducer default to",
      spec({ model: "in-house", goal: "g", reduce: { kind: "llm" }, budget: { max_usd: 1 } }),
      none,
      [{ path: "budget.max_usd", message: noPrice("in-house") }],
    ],
    [
      "a tenant's USD cap over a model without a price (path: model)",
      spec({ model: "in-house" }),
      { ...none, tenantCap: { max_usd_per_month: 5 } },
      [{ path: "model", message: noPrice("in-house") }],
    ],
    [
      "a swarm's USD budget under a tenant's USD cap (path: budget.max_usd)",
      spec({ model: "in-house", budget: { max_usd: 1 } }),
      { ...none, tenantCap: { max_usd_per_month: 5, max_tokens_per_month: 1_000 } },
      [{ path: "budget.max_usd", message: noPrice("in-house") }],
    ],
    [
      "a served model without a price under a USD budget",
      spec({ model: "in-house", budget: { max_usd: 1 } }),
      { ...none, gateway: listed },
      [{ path: "budget.max_usd", message: noPrice("in-house") }],
    ],
  ])("refuses %s", (_label, given, context, details) => {
    expect(admitSwarm(given, context)).toEqual({ ok: false, error: details });
  });
});
