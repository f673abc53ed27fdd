// The run-time scenario (latency, faults, rate limits, usage shapes, tool dialects, invalid outputs): its type, defaults and validation of untrusted JSON.

import { isFaultKind, isScriptStep } from "./faults.ts";
import type { FaultKind, ScriptStep } from "./faults.ts";
import { MAX_LATENCY_MS, parseLatency } from "./latency.ts";
import type { LatencySpec, Parsed } from "./latency.ts";
import { TOOL_DIALECTS, isToolDialect } from "./tool-dialect.ts";
import type { ToolDialect } from "./tool-dialect.ts";
import { USAGE_SHAPES, isUsageShape } from "./usage.ts";
import type { UsageShape } from "./usage.ts";

export interface Scenario {
  /** PRNG seed for latency sampling and fault decisions (default 1). Setting a scenario re-seeds. */
  seed?: number;
  /** Latency before the answer (default 0). */
  latency?: LatencySpec;
  /** Per-model latency overriding `latency`. */
  latency_by_model?: Record<string, LatencySpec>;
  /**
   * Time to first byte in ms (default 0): a streamed answer's status and headers go out this long
   * after the request, its body still ends after the sampled latency (right after the headers when
   * the latency is shorter). A non-streamed answer, sent whole at the end, is never sent before it.
   */
  ttfb_ms?: number;
  /** Delay between streamed chunks in ms (default 0: all chunks in one write). */
  chunk_delay_ms?: number;
  /** Per-request probability of each fault kind. */
  rates?: Partial<Record<FaultKind, number>>;
  /** Fault kinds consumed in order by successive requests before `rates` apply ("ok" = normal). */
  script?: ScriptStep[];
  /** retry-after for injected 429s, in seconds (may be fractional; default 1). */
  retry_after_s?: number;
  /** Requests per minute allowed per API key (sliding 60 s window; default off). */
  rpm_per_key?: number;
  /**
   * Tokens per minute allowed per API key (sliding 60 s window; default off). A request needs
   * window tokens + prompt + max_tokens (or, without max_tokens, its actual completion) ≤ limit;
   * once it ends its charge becomes its actual total.
   */
  tpm_per_key?: number;
  /** The vendor `usage` shape of answers (default "openai"). */
  usage_shape?: UsageShape;
  /** Per-model usage shape overriding `usage_shape`. */
  usage_shape_by_model?: Record<string, UsageShape>;
  /** Share of prompt tokens reported as cached, floor(prompt × share), in [0, 1] (default 0). */
  cached_share?: number;
  /**
   * The prompt-prefix cache (prefix-cache.ts; default true): a prompt of ≥ 1,024 tokens that shares
   * a prefix with an earlier, processed request reports it as cached, in 128-token blocks.
   */
  prefix_cache?: boolean;
  /**
   * The prompt's prefill inside the ttfb, in ms per 1,000 prompt tokens (default 0): the prefix
   * cache's hit skips its tokens' share, so a call's headers and its end come that much sooner, at
   * most its whole ttfb (prefix-cache.ts `toPrefillSkippedMs`).
   */
  prefill_ms_per_1k_tokens?: number;
  /** How tool calls go on the wire (default: by model name, see defaultToolDialect). */
  tool_dialect?: ToolDialect;
  /** Per-model tool dialect overriding `tool_dialect` and the model-name default. */
  tool_dialect_by_model?: Record<string, ToolDialect>;
  /** The next N json_schema answers (repair answers included) break their schema. */
  invalid_json?: number;
  /** The next N planner answers are invalid plans (duplicate task ids). */
  invalid_plans?: number;
}

const SCENARIO_KEYS: ReadonlySet<string> = new Set([
  "seed",
  "latency",
  "latency_by_model",
  "ttfb_ms",
  "chunk_delay_ms",
  "rates",
  "script",
  "retry_after_s",
  "rpm_per_key",
  "tpm_per_key",
  "usage_shape",
  "usage_shape_by_model",
  "cached_share",
  "prefix_cache",
  "prefill_ms_per_1k_tokens",
  "tool_dialect",
  "tool_dialect_by_model",
  "invalid_json",
  "invalid_plans",
]);

const SHAPES_TEXT = USAGE_SHAPES.join(", ");
const DIALECTS_TEXT = TOOL_DIALECTS.join(", ");

const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Validates a scenario from JSON (POST /admin/scenario, --scenario file). Unknown fields are errors. */
export function parseScenario(input: unknown): Parsed<Scenario> {
  if (!isObj(input)) return { ok: false, error: "scenario must be a JSON object" };
  const out: Scenario = {};
  for (const [key, v] of Object.entries(input)) {
    if (!SCENARIO_KEYS.has(key)) return { ok: false, error: `unknown scenario field "${key}"` };
    if (v === null || v === undefined) continue;
    switch (key) {
      case "seed":
        if (!isNum(v) || !Number.isInteger(v)) return { ok: false, error: "seed must be an integer" };
        out.seed = v;
        break;
      case "latency": {
        const r = parseLatency(v);
        if (!r.ok) return r;
        out.latency = r.value;
        break;
      }
      case "latency_by_model": {
        if (!isObj(v)) return { ok: false, error: "latency_by_model must be an object" };
        const map: Record<string, LatencySpec> = {};
        for (const [model, spec] of Object.entries(v)) {
          const r = parseLatency(spec);
          if (!r.ok) return { ok: false, error: `latency_by_model.${model}: ${r.error}` };
          map[model] = r.value;
        }
        out.latency_by_model = map;
        break;
      }
      case "ttfb_ms":
        if (!isNum(v) || v < 0 || v > MAX_LATENCY_MS) return { ok: false, error: `ttfb_ms must be in [0, ${MAX_LATENCY_MS}]` };
        out.ttfb_ms = v;
        break;
      case "chunk_delay_ms":
        if (!isNum(v) || v < 0) return { ok: false, error: "chunk_delay_ms must be ≥ 0" };
        out.chunk_delay_ms = v;
        break;
      case "rates": {
        if (!isObj(v)) return { ok: false, error: "rates must be an object" };
        const rates: Partial<Record<FaultKind, number>> = {};
        for (const [kind, p] of Object.entries(v)) {
          if (!isFaultKind(kind)) return { ok: false, error: `rates: unknown fault kind "${kind}"` };
          if (!isNum(p) || p < 0 || p > 1) return { ok: false, error: `rates.${kind} must be in [0, 1]` };
          rates[kind] = p;
        }
        out.rates = rates;
        break;
      }
      case "script": {
        if (!Array.isArray(v)) return { ok: false, error: "script must be an array" };
        const steps: ScriptStep[] = [];
        for (const s of v) {
          if (!isScriptStep(s)) return { ok: false, error: `script: unknown step ${JSON.stringify(s)}` };
          steps.push(s);
        }
        out.script = steps;
        break;
      }
      case "retry_after_s":
        if (!isNum(v) || v < 0) return { ok: false, error: "retry_after_s must be ≥ 0" };
        out.retry_after_s = v;
        break;
      case "rpm_per_key":
        if (!isNum(v) || !Number.isInteger(v) || v < 0) return { ok: false, error: "rpm_per_key must be an integer ≥ 0 (0 = off)" };
        out.rpm_per_key = v;
        break;
      case "tpm_per_key":
        if (!isNum(v) || !Number.isInteger(v) || v < 0) return { ok: false, error: "tpm_per_key must be an integer ≥ 0 (0 = off)" };
        out.tpm_per_key = v;
        break;
      case "usage_shape":
        if (!isUsageShape(v)) return { ok: false, error: `usage_shape must be one of ${SHAPES_TEXT}` };
        out.usage_shape = v;
        break;
      case "usage_shape_by_model": {
        if (!isObj(v)) return { ok: false, error: "usage_shape_by_model must be an object" };
        const map: Record<string, UsageShape> = {};
        for (const [model, shape] of Object.entries(v)) {
          if (!isUsageShape(shape)) return { ok: false, error: `usage_shape_by_model.${model} must be one of ${SHAPES_TEXT}` };
          map[model] = shape;
        }
        out.usage_shape_by_model = map;
        break;
      }
      case "cached_share":
        if (!isNum(v) || v < 0 || v > 1) return { ok: false, error: "cached_share must be in [0, 1]" };
        out.cached_share = v;
        break;
      case "prefix_cache":
        if (typeof v !== "boolean") return { ok: false, error: "prefix_cache must be true or false" };
        out.prefix_cache = v;
        break;
      case "prefill_ms_per_1k_tokens":
        if (!isNum(v) || v < 0 || v > MAX_LATENCY_MS) return { ok: false, error: `prefill_ms_per_1k_tokens must be in [0, ${MAX_LATENCY_MS}]` };
        out.prefill_ms_per_1k_tokens = v;
        break;
      case "tool_dialect":
        if (!isToolDialect(v)) return { ok: false, error: `tool_dialect must be one of ${DIALECTS_TEXT}` };
        out.tool_dialect = v;
        break;
      case "tool_dialect_by_model": {
        if (!isObj(v)) return { ok: false, error: "tool_dialect_by_model must be an object" };
        const map: Record<string, ToolDialect> = {};
        for (const [model, dialect] of Object.entries(v)) {
          if (!isToolDialect(dialect)) return { ok: false, error: `tool_dialect_by_model.${model} must be one of ${DIALECTS_TEXT}` };
          map[model] = dialect;
        }
        out.tool_dialect_by_model = map;
        break;
      }
      case "invalid_json":
      case "invalid_plans":
        if (!isNum(v) || !Number.isInteger(v) || v < 0) return { ok: false, error: `${key} must be an integer ≥ 0` };
        out[key] = v;
        break;
    }
  }
  return { ok: true, value: out };
}

/** Parses `429=0.2,500=0.05` (CLI --fault-rate). */
export function parseRatesCli(s: string): Parsed<Partial<Record<FaultKind, number>>> {
  const obj: Record<string, number> = {};
  for (const part of s.split(",")) {
    if (part.trim() === "") continue;
    const [k, p] = part.split("=");
    if (k === undefined || p === undefined) return { ok: false, error: `bad --fault-rate entry "${part}" (want KIND=P)` };
    obj[k.trim()] = Number(p);
  }
  const r = parseScenario({ rates: obj });
  return r.ok ? { ok: true, value: r.value.rates ?? {} } : r;
}
