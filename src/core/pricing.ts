// Model prices (USD per million tokens), the MODEL_PRICES override, and the cost of a call.
// No I/O: the env var's text is passed in.
import { z } from "zod";
import { err, ok, type Result } from "./result.ts";
import type { Usage } from "./usage.ts";

export const ModelPriceSchema = z.strictObject({
  input: z.number().nonnegative(),
  cached_input: z.number().nonnegative(),
  output: z.number().nonnegative(),
});
export type ModelPrice = z.infer<typeof ModelPriceSchema>;

export const PriceTableSchema = z.record(z.string(), ModelPriceSchema);
export type PriceTable = z.infer<typeof PriceTableSchema>;

const price = (input: number, cached_input: number, output: number): ModelPrice => Object.freeze({ input, cached_input, output });

/** Built-in prices; MODEL_PRICES is merged over them. Frozen: copy before changing. */
export const DEFAULT_PRICES: PriceTable = Object.freeze({
  "gpt-4.1": price(2, 0.5, 8),
  "claude-sonnet-4.5": price(3, 0.3, 15),
  "gemini-2.5-flash": price(0.3, 0.03, 2.5),
  "deepseek-v3.2": price(0.28, 0.028, 0.42),
  "kimi-k2.5": price(0.15, 0.015, 0.6),
  /** The mock model used locally. */
  "mock-1": price(0.1, 0.01, 0.4),
});

const PRICE_FIELDS = ["input", "cached_input", "output"] as const;

/**
 * Parses the `MODEL_PRICES` env var (a JSON object of model → price) and merges it over
 * DEFAULT_PRICES. An entry for a model already in the table may give only some fields (the rest
 * are kept); a new model must give all three. Missing or blank text gives the defaults.
 * Errors name the model and the field, e.g. `MODEL_PRICES: model "x" field "output" is missing`.
 */
export function parsePriceTable(json: string | undefined): Result<PriceTable, string> {
  const base: [string, ModelPrice][] = Object.entries(DEFAULT_PRICES).map(([m, p]) => [m, { ...p }]);
  if (json === undefined || json.trim().length === 0) return ok(Object.fromEntries(base));

  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (e) {
    return err(`MODEL_PRICES is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return err("MODEL_PRICES must be a JSON object of model name → { input, cached_input, output }");
  }

  const merged = new Map<string, ModelPrice>(base);
  for (const [model, value] of Object.entries(parsed)) {
    if (model.trim().length === 0) return err("MODEL_PRICES: model names must not be empty");
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return err(`MODEL_PRICES: model "${model}" must map to an object with input, cached_input, output`);
    }
    const partial = ModelPriceSchema.partial().safeParse(value);
    if (!partial.success) {
      const issue = partial.error.issues[0];
      if (issue?.code === "unrecognized_keys") {
        return err(`MODEL_PRICES: model "${model}" field "${issue.keys[0] ?? ""}" is not a price field (input, cached_input, output)`);
      }
      const field = issue?.path[0];
      return err(`MODEL_PRICES: model "${model}" field "${String(field ?? "")}" must be a non-negative number (USD per million tokens)`);
    }
    const known = merged.get(model);
    const given = partial.data;
    if (known === undefined) {
      const missing = PRICE_FIELDS.find((f) => given[f] === undefined);
      if (missing !== undefined) {
        return err(`MODEL_PRICES: model "${model}" field "${missing}" is missing (a model not in the defaults needs input, cached_input and output)`);
      }
    }
    merged.set(model, {
      input: given.input ?? known?.input ?? 0,
      cached_input: given.cached_input ?? known?.cached_input ?? 0,
      output: given.output ?? known?.output ?? 0,
    });
  }
  // Object.fromEntries defines own properties, so a model named "__proto__" stays a plain key.
  return ok(Object.fromEntries(merged));
}

/**
 * The price of `model`: its exact entry, else the longest table key that `model` starts with,
 * followed by `-` or `@` (`gpt-4.1-2025-04-14` → `gpt-4.1`, `claude-sonnet-4.5@20250929` →
 * `claude-sonnet-4.5`), else null.
 */
export function resolvePrice(table: PriceTable, model: string): ModelPrice | null {
  if (Object.hasOwn(table, model)) return table[model] ?? null;
  let best: string | null = null;
  for (const key of Object.keys(table)) {
    if (key.length === 0 || key.length >= model.length || !model.startsWith(key)) continue;
    const next = model[key.length];
    if ((next === "-" || next === "@") && (best === null || key.length > best.length)) best = key;
  }
  return best === null ? null : (table[best] ?? null);
}

/** Picodollars (1e-12 USD) per token for a price in USD per million tokens, rounded to 1e-6 USD/MTok. */
function picoPerToken(usdPerMTok: number): bigint {
  return Number.isFinite(usdPerMTok) && usdPerMTok > 0 ? BigInt(Math.round(usdPerMTok * 1e6)) : 0n;
}

function tokens(n: number): bigint {
  return Number.isFinite(n) && n > 0 ? BigInt(Math.round(n)) : 0n;
}

/**
 * USD cost of one call: ((prompt − cached) × input + cached × cached_input + completion × output) / 1e6.
 * Cached tokens are part of prompt_tokens, so they are billed once, at the cached price (clamped
 * to prompt_tokens). Computed exactly in integer picodollars (BigInt), so the only rounding is
 * the final conversion to a double: below ~$9,000 (2^53 picodollars) the result is the double
 * nearest the exact cost. Prices are
 * taken to 1e-6 USD/MTok, which is finer than any published price.
 */
export function costOfUsage(usage: Usage, price: ModelPrice): number {
  const prompt = tokens(usage.prompt_tokens);
  const cachedRaw = tokens(usage.cached_tokens);
  // bigint: Math.min does not take them.
  const cached = cachedRaw > prompt ? prompt : cachedRaw;
  const completion = tokens(usage.completion_tokens);
  const pico = (prompt - cached) * picoPerToken(price.input) + cached * picoPerToken(price.cached_input) + completion * picoPerToken(price.output);
  return Number(pico) / 1e12;
}
