// Which model a task calls: the swarm's mix, the budget's fallback tier once the budget runs low,
// the fallbacks, through the circuit breakers (`SwarmCircuits`, which owns the `circuits` table);
// and what the gateway says of a model. It never changes a task or the swarm row.
import { toHalfOpenAt } from "../core/circuit-breaker.ts";
import type { RoomSettings } from "../core/env-settings.ts";
import { resolvePrice } from "../core/pricing.ts";
import { assignModel } from "../core/route-model.ts";
import type { CircuitView } from "../core/swarm-contract.ts";
import type { SwarmCircuits } from "./swarm-circuits.ts";
import { engineModels, firstModel, plannerOf, reduceSpecOf } from "./swarm-phases.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";
import type { SwarmStore } from "./swarm-store.ts";
import type { SwarmTotals } from "./swarm-totals.ts";

export class SwarmRouting {
  constructor(
    private readonly sql: SqlStorage,
    private readonly store: SwarmStore,
    private readonly totals: SwarmTotals,
    private readonly circuits: SwarmCircuits,
    private readonly settings: Pick<RoomSettings, "gateway" | "prices">,
  ) {}

  /**
   * The models a task may call, in order: its model of the mix (or, once the budget runs low, the
   * cheapest models of the budget's fallback tier), then the fallbacks. Without a task: all of them.
   */
  private models(swarm: SwarmRow, taskId?: string, knownHint?: string | null): string[] {
    const { fallback } = this.store.fixed(swarm);
    const mix = this.store.mix(swarm);
    const tier = this.tierModels(swarm);
    const lowBudget = tier.length > 0 && this.budgetRunningLow(swarm);
    const hint = taskId === undefined ? null : knownHint === undefined ? this.modelHint(taskId) : knownHint;
    const primary =
      taskId === undefined
        ? [
            ...mix.map((m) => m.model),
            ...engineModels({ goal: swarm.goal, plannerModel: plannerOf(swarm)?.model, reduce: reduceSpecOf(swarm) }, firstModel(swarm)),
            ...tier,
          ]
        : hint !== null
          ? [hint]
          : lowBudget
            ? tier
            : [this.primaryModel(swarm, taskId, null)];
    return [...new Set([...primary, ...fallback])];
  }

  /** The model a task is routed to first: its model of the mix, or the cheapest of the fallback tier on a low budget. */
  private primaryModel(swarm: SwarmRow, taskId: string, knownHint?: string | null): string {
    const hint = knownHint === undefined ? this.modelHint(taskId) : knownHint;
    if (hint !== null) return hint;
    const tier = this.tierModels(swarm);
    if (tier.length > 0 && tier[0] !== undefined && this.budgetRunningLow(swarm)) return tier[0];
    return assignModel(this.store.mix(swarm), swarm.id, taskId);
  }

  /** An engine task's own model (the planner's, the reducer's); null for a sub-task. */
  private modelHint(taskId: string): string | null {
    return this.sql.exec<{ m: string | null }>("SELECT model_hint AS m FROM tasks WHERE id = ?", taskId).toArray()[0]?.m ?? null;
  }

  /** The gateway's models of the budget's fallback tier, cheapest output first. */
  tierModels(swarm: SwarmRow): string[] {
    const tier = this.store.budget(swarm)?.fallback_tier;
    const gateway = this.settings.gateway;
    if (tier === undefined || gateway === null) return [];
    const price = (m: string) => resolvePrice(this.settings.prices, m)?.output ?? Number.POSITIVE_INFINITY;
    return Object.entries(gateway.models)
      .filter(([, model]) => model.tier === tier)
      .map(([name]) => name)
      .sort((a, b) => price(a) - price(b));
  }

  /**
   * Less than `fallback_at` of the budget is left after what was really spent (USD when capped in
   * USD, else tokens). Reservations don't count here: a full window reserves most of a small budget
   * at once, which says nothing about the spend.
   */
  budgetRunningLow(swarm: SwarmRow): boolean {
    const budget = this.store.budget(swarm);
    if (budget === null) return false;
    const charged = this.totals.charged();
    if (budget.max_usd !== undefined) return budget.max_usd - charged.usd < budget.fallback_at * budget.max_usd;
    if (budget.max_tokens !== undefined) return budget.max_tokens - charged.tokens < budget.fallback_at * budget.max_tokens;
    return false;
  }

  /** A call to `model` ended: its breaker moves (and says so when it opens). */
  updateCircuit(model: string, outcome: "success" | "failure", now: number): void {
    if (this.circuits.record(model, outcome, now)) {
      console.warn(JSON.stringify({ event: "circuit_open", model, failures: this.circuits.get(model).failures }));
    }
  }

  /**
   * The first model, in the spec's order (model, then fallback), whose circuit lets a call through
   * now; null when every circuit is open. With `probe` (a claim) a half-open circuit's probe is used up.
   */
  pickModel(swarm: SwarmRow, now: number, options: { probe: boolean; taskId?: string; hint?: string | null } = { probe: true }): string | null {
    for (const model of this.models(swarm, options.taskId, options.hint)) {
      if (this.circuits.allows(model, now, options.probe)) return model;
    }
    return null;
  }

  /** When the first open circuit half-opens, if every circuit is open now; else null. */
  parkedUntil(): number | null {
    const swarm = this.store.swarm();
    if (swarm === null || swarm.finished_at !== null || swarm.state === "cancelled") return null;
    const now = Date.now();
    if (this.pickModel(swarm, now, { probe: false }) !== null) return null;
    const times = this.models(swarm)
      .map((model) => this.circuits.halfOpenAt(model, now))
      .filter((t): t is number => t !== null);
    return times.length === 0 ? null : Math.min(...times);
  }

  /** Why the swarm is where it is: its stored end reason, or that it waits for a circuit to half-open. */
  reason(swarm: SwarmRow): string | null {
    if (swarm.reason !== null) return swarm.reason;
    const until = this.parkedUntil();
    if (until === null) return null;
    return `every model's circuit is open (${this.models(swarm).join(", ")}): tasks wait until ${new Date(until).toISOString()}`;
  }

  circuitViews(swarm: SwarmRow): CircuitView[] {
    const now = Date.now();
    return this.models(swarm).map((model) => {
      const circuit = this.circuits.current(model, now);
      const at = toHalfOpenAt(circuit);
      return { model, state: circuit.state, failures: circuit.failures, retry_at: at === null ? null : new Date(at).toISOString() };
    });
  }

  /** The gateway's context size of a model, when configured. */
  readonly gatewayContext = (model: string): number | undefined => this.settings.gateway?.models[model]?.context;
}
