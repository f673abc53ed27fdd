// Estimates a swarm before it runs: calls, tokens and cost ranges, the cost of its model mix, the
// same spec priced on every model of the price table, and a monthly projection. No I/O.
// Token counts are a deterministic character approximation; every assumption is stated in the answer.
import { callsPerAttempt, MAX_TOOL_RESULT_CHARS } from "./agent-limits.ts";
import { worstCaseAttempt } from "./budget.ts";
import type { PlannedSwarm } from "./parse-swarm-spec.ts";
import { costOfUsage, resolvePrice, type ModelPrice, type PriceTable } from "./pricing.ts";
import { toModelMix, type WeightedModel } from "./route-model.ts";
import type { BudgetCaps } from "./spec-schema.ts";

/** Tokens of chat framing per message (role markers, separators); what the mock model counts too. */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** The least a successful call can answer. */
export const MIN_COMPLETION_TOKENS = 1;
export const DEFAULT_DAYS_PER_MONTH = 30;

export interface Range {
  min: number;
  max: number;
}

export interface Projection {
  jobs_per_day: number;
  days_per_month: number;
}

export interface EstimateInput {
  system: string | null;
  prompts: readonly string[];
  /** One entry of weight 1 for a single model. */
  mix: readonly WeightedModel[];
  fallback: readonly string[];
  maxOutputTokens: number;
  maxAttempts: number;
  /** The spec's reducer is `llm` (its calls are not estimated). */
  reducesByModel?: boolean;
  /** Model calls one attempt may make (the agent loop's turns plus a repair turn; 1 for a plain completion). */
  callsPerAttempt: number;
  budget: BudgetCaps | null;
  prices: PriceTable;
  projection: Projection | null;
}

export interface ModelEstimate {
  model: string;
  weight: number;
  /** weight / Σ weights: the expected part of the tasks this model runs. */
  share: number;
  /** USD per million tokens; null when the price table has no entry for the model. */
  price: ModelPrice | null;
  /** This model's share of the swarm's cost; null when it has no price. */
  cost_usd: Range | null;
}

export interface ModelComparison {
  model: string;
  price: ModelPrice;
  /** The whole spec run on this one model. */
  cost_usd: Range;
  monthly_cost_usd?: Range;
}

export interface BudgetVerdict {
  max_usd?: number;
  max_tokens?: number;
  /**
   * `always`: even the worst case the SwarmRoom reserves (every prompt byte a token, every
   * attempt at max_output_tokens, the dearest model) fits, so the budget never stops the swarm;
   * `unlikely`: even the minimum estimate exceeds it, expect `skipped_budget` tasks; else `maybe`.
   */
  fits: "always" | "maybe" | "unlikely";
}

export interface ProjectionEstimate {
  jobs_per_day: number;
  days_per_month: number;
  jobs_per_month: number;
  tokens_per_month: Range;
  /** null when a model of the mix has no price. */
  monthly_cost_usd: Range | null;
  by_model: { model: string; monthly_cost_usd: Range | null }[];
}

export interface SwarmEstimate {
  tasks: number;
  calls: Range;
  tokens: { prompt: Range; completion: Range; total: Range };
  /** The mix's cost; null when a model of the mix has no price. */
  cost_usd: Range | null;
  by_model: ModelEstimate[];
  /** Every priced model of the table, cheapest worst case first. */
  compare_models: ModelComparison[];
  budget?: BudgetVerdict;
  assumptions: string[];
  projection?: ProjectionEstimate;
}

/** Prompt tokens of one call: ceil(chars / 4) + 4 per message, for the system message (when set) and the task's. */
export function estimatePromptTokens(system: string | null, prompt: string): number {
  const message = (text: string): number => Math.ceil(text.length / 4) + MESSAGE_OVERHEAD_TOKENS;
  return (system === null ? 0 : message(system)) + message(prompt);
}

/** UTF-8 byte length, as the SwarmRoom measures prompts for budget reservations (core has no TextEncoder). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    // A lone surrogate is encoded as U+FFFD: 3 bytes.
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

// Costs are added in integer picodollars (costOfUsage's resolution), so sums and shares are exact.
const PICO_PER_USD = 1e12;
const toUsd = (pico: number): number => pico / PICO_PER_USD;
const toUsdRange = (pico: Range): Range => ({ min: toUsd(pico.min), max: toUsd(pico.max) });
const scale = (pico: Range, factor: number): Range => ({ min: Math.round(pico.min * factor), max: Math.round(pico.max * factor) });

function picoOf(prompt: number, completion: number, price: ModelPrice): number {
  const usd = costOfUsage(
    { prompt_tokens: prompt, cached_tokens: 0, completion_tokens: completion, reasoning_tokens: 0, total_tokens: prompt + completion },
    price,
  );
  return Math.round(usd * PICO_PER_USD);
}

/** The estimate for plain inputs; `estimateSwarm` builds them from a validated spec. */
export function estimateCalls(input: EstimateInput): SwarmEstimate {
  const tasks = input.prompts.length;
  const attempts = input.maxAttempts;
  const turns = input.callsPerAttempt;
  const promptPerJob = input.prompts.reduce((sum, prompt) => sum + estimatePromptTokens(input.system, prompt), 0);
  // Turn k re-sends the conversation: the prompt plus k-1 answers and tool results at their limits.
  const growth = input.maxOutputTokens + Math.ceil(MAX_TOOL_RESULT_CHARS / 4);
  const promptPerAttempt = promptPerJob * turns + tasks * growth * ((turns * (turns - 1)) / 2);
  const calls: Range = { min: tasks, max: tasks * attempts * turns };
  const prompt: Range = { min: promptPerJob, max: promptPerAttempt * attempts };
  const completion: Range = { min: calls.min * MIN_COMPLETION_TOKENS, max: calls.max * input.maxOutputTokens };
  const total: Range = { min: prompt.min + completion.min, max: prompt.max + completion.max };

  const picoOn = (price: ModelPrice): Range => ({ min: picoOf(prompt.min, completion.min, price), max: picoOf(prompt.max, completion.max, price) });

  const totalWeight = input.mix.reduce((sum, entry) => sum + entry.weight, 0);
  const mix = input.mix.map((entry) => {
    const price = resolvePrice(input.prices, entry.model);
    const share = entry.weight / totalWeight;
    return { entry, share, price, pico: price === null ? null : scale(picoOn(price), share) };
  });
  const mixPico = mix.reduce<Range | null>((sum, m) => (sum === null || m.pico === null ? null : { min: sum.min + m.pico.min, max: sum.max + m.pico.max }), {
    min: 0,
    max: 0,
  });

  const jobsPerMonth = input.projection === null ? null : input.projection.jobs_per_day * input.projection.days_per_month;
  const monthly = (pico: Range | null): Range | null => (pico === null || jobsPerMonth === null ? null : toUsdRange(scale(pico, jobsPerMonth)));

  const compare = Object.entries(input.prices)
    .map(([model, price]) => ({ model, price, pico: picoOn(price) }))
    .sort((a, b) => a.pico.max - b.pico.max || a.pico.min - b.pico.min || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0))
    .map(({ model, price, pico }): ModelComparison => {
      const perMonth = monthly(pico);
      return { model, price, cost_usd: toUsdRange(pico), ...(perMonth === null ? {} : { monthly_cost_usd: perMonth }) };
    });

  const estimate: SwarmEstimate = {
    tasks,
    calls,
    tokens: { prompt, completion, total },
    cost_usd: mixPico === null ? null : toUsdRange(mixPico),
    by_model: mix.map(({ entry, share, price, pico }) => ({
      model: entry.model,
      weight: entry.weight,
      share,
      price,
      cost_usd: pico === null ? null : toUsdRange(pico),
    })),
    compare_models: compare,
    assumptions: toAssumptions(
      input,
      mix.filter((m) => m.price === null).map((m) => m.entry.model),
    ),
  };

  if (input.budget !== null) estimate.budget = toBudgetVerdict(input, { total, cost: mixPico });

  if (input.projection !== null && jobsPerMonth !== null) {
    estimate.projection = {
      jobs_per_day: input.projection.jobs_per_day,
      days_per_month: input.projection.days_per_month,
      jobs_per_month: jobsPerMonth,
      tokens_per_month: { min: Math.round(total.min * jobsPerMonth), max: Math.round(total.max * jobsPerMonth) },
      monthly_cost_usd: monthly(mixPico),
      by_model: mix.map(({ entry, pico }) => ({ model: entry.model, monthly_cost_usd: monthly(pico) })),
    };
  }
  return estimate;
}

/** Whether the budget can stop the swarm, measured as the SwarmRoom measures reservations. */
function toBudgetVerdict(input: EstimateInput, estimate: { total: Range; cost: Range | null }): BudgetVerdict {
  const budget: BudgetCaps = input.budget ?? {};
  const bytesPerCall = input.prompts.map((prompt) => utf8Length(prompt) + (input.system === null ? 0 : utf8Length(input.system)));
  // Retries may run on any model of the mix or the fallback list: the worst case takes the dearest.
  const models = [...new Set([...input.mix.map((m) => m.model), ...input.fallback])];
  let worstTokens = 0;
  let worstPico: number | null = 0;
  for (const model of models) {
    const price = resolvePrice(input.prices, model);
    let tokens = 0;
    let pico = 0;
    for (const bytes of bytesPerCall) {
      const call = worstCaseAttempt(bytes, input.maxOutputTokens, input.callsPerAttempt, price);
      tokens += call.tokens * input.maxAttempts;
      pico += Math.round(call.usd * PICO_PER_USD) * input.maxAttempts;
    }
    worstTokens = Math.max(worstTokens, tokens);
    worstPico = price === null || worstPico === null ? null : Math.max(worstPico, pico);
  }

  const verdicts: BudgetVerdict["fits"][] = [];
  if (budget.max_usd !== undefined) {
    const limit = Math.round(budget.max_usd * PICO_PER_USD);
    if (estimate.cost !== null && estimate.cost.min > limit) verdicts.push("unlikely");
    else verdicts.push(worstPico !== null && worstPico <= limit ? "always" : "maybe");
  }
  if (budget.max_tokens !== undefined) {
    if (estimate.total.min > budget.max_tokens) verdicts.push("unlikely");
    else verdicts.push(worstTokens <= budget.max_tokens ? "always" : "maybe");
  }
  const fits = verdicts.includes("unlikely") ? "unlikely" : verdicts.every((v) => v === "always") ? "always" : "maybe";
  return {
    ...(budget.max_usd === undefined ? {} : { max_usd: budget.max_usd }),
    ...(budget.max_tokens === undefined ? {} : { max_tokens: budget.max_tokens }),
    fits,
  };
}

function toAssumptions(input: EstimateInput, unpriced: readonly string[]): string[] {
  const assumptions = [
    `prompt tokens ≈ ceil(characters / 4) + ${MESSAGE_OVERHEAD_TOKENS} per message (${input.system === null ? "the task prompt" : "system prompt and task prompt, both sent with every call"}); real tokenizers differ, code and non-English text often need more tokens per character`,
    `min: every task succeeds on its first call with a ${MIN_COMPLETION_TOKENS}-token answer; max: every task uses all ${input.maxAttempts} attempts (limits.max_attempts) and every answer reaches ${input.maxOutputTokens} tokens (limits.max_output_tokens)`,
    "no prompt-cache hits: cached input tokens, billed at the cheaper cached rate, can bring the real cost below min",
    "prices are USD per million tokens from the price table (built-in defaults merged with MODEL_PRICES)",
  ];
  if (input.callsPerAttempt > 1) {
    assumptions.push(
      `each attempt may make up to ${input.callsPerAttempt} model calls (the agent loop's limits.max_turns with tools, plus one repair turn for a JSON response_format); max assumes every turn is used and each re-sends the conversation with every earlier answer and tool result at its limit`,
    );
  }
  if (input.mix.length > 1) {
    assumptions.push("the mix's shares are expected values: each task's model is picked by a hash of swarm and task id, so a run's split varies around them");
  }
  if (input.fallback.length > 0) {
    assumptions.push(`retries that fall back to ${input.fallback.join(", ")} are priced as the mix's models`);
  }
  for (const model of unpriced) {
    assumptions.push(`model "${model}" has no price in the price table: its cost is null, and so are the swarm's cost and monthly cost`);
  }
  if (input.reducesByModel) {
    assumptions.push("the llm reducer's calls (one per chunk of results, per level) are not included");
  }
  if (input.budget !== null) {
    assumptions.push(
      "budget.fits compares the budget with the SwarmRoom's reservation bound (every prompt byte a token, plus framing) and with the min estimate",
    );
  }
  return assumptions;
}

/** The estimate of a validated, planned swarm spec against a price table. */
export function estimateSwarm(swarm: PlannedSwarm, prices: PriceTable, projection: Projection | null): SwarmEstimate {
  return estimateCalls({
    system: swarm.spec.system ?? null,
    prompts: swarm.tasks.map((task) => task.prompt),
    mix: toModelMix(swarm.spec.model),
    fallback: swarm.spec.fallback ?? [],
    maxOutputTokens: swarm.spec.limits.max_output_tokens,
    maxAttempts: swarm.spec.limits.max_attempts,
    callsPerAttempt: callsPerAttempt(swarm.spec),
    reducesByModel: swarm.spec.reduce?.kind === "llm",
    budget: swarm.spec.budget ?? null,
    prices,
    projection,
  });
}
