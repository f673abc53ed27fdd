// Latency specs (fixed ms or a distribution): parsing from JSON/CLI strings and seeded sampling.

import type { Prng } from "./prng.ts";

export type LatencySpec =
  | number
  | { dist: "fixed"; ms: number }
  | { dist: "uniform"; min: number; max: number }
  | { dist: "normal"; mean: number; stddev: number }
  | { dist: "lognormal"; median: number; p95: number };

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** z-score of the 95th percentile of a standard normal. */
const Z95 = 1.6448536269514722;
/** Upper bound on any single sampled or requested latency (10 minutes). */
export const MAX_LATENCY_MS = 600_000;

const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const clampMs = (ms: number): number => Math.min(MAX_LATENCY_MS, Math.max(0, ms));

/** Draws one latency in ms (≥ 0, rounded) from a spec. */
export function sampleLatency(spec: LatencySpec | undefined, prng: Prng): number {
  if (spec === undefined) return 0;
  if (typeof spec === "number") return clampMs(Math.round(spec));
  switch (spec.dist) {
    case "fixed":
      return clampMs(Math.round(spec.ms));
    case "uniform":
      return clampMs(Math.round(spec.min + (spec.max - spec.min) * prng.next()));
    case "normal":
      return clampMs(Math.round(spec.mean + spec.stddev * prng.normal()));
    case "lognormal": {
      const mu = Math.log(spec.median);
      const sigma = Math.max(0, (Math.log(spec.p95) - mu) / Z95);
      return clampMs(Math.round(Math.exp(mu + sigma * prng.normal())));
    }
  }
}

/**
 * The mean of max(L, atLeastMs) for L drawn by sampleLatency from a spec, in ms (for a benchmark's
 * ideal wall time: a streamed call with a ttfb t lasts max(latency, t), so pass t; 0 gives the
 * mean latency). lognormal: median·exp(σ²/2) at 0, with σ = ln(p95/median)/1.645; normal: samples
 * are clamped at 0, so it is the mean of max(0, X) at 0. The clamp at MAX_LATENCY_MS and the
 * rounding to whole ms are ignored.
 */
export function meanLatencyMs(spec: LatencySpec | undefined, atLeastMs = 0): number {
  const t = Math.max(0, atLeastMs);
  if (spec === undefined) return t;
  if (typeof spec === "number") return Math.max(clampMs(spec), t);
  switch (spec.dist) {
    case "fixed":
      return Math.max(clampMs(spec.ms), t);
    case "uniform": {
      const { min: a, max: b } = spec;
      if (t <= a) return (a + b) / 2;
      if (t >= b) return t;
      // t·P(L ≤ t) + ∫_t^b x dx / (b − a)
      return (t * (t - a) + (b * b - t * t) / 2) / (b - a);
    }
    case "normal": {
      const { mean: mu, stddev: sd } = spec;
      if (sd === 0) return Math.max(mu, t);
      // E[max(X, t)] = t·Φ(z) + μ·(1 − Φ(z)) + σ·φ(z), z = (t − μ)/σ
      const z = (t - mu) / sd;
      return t * normalCdf(z) + mu * (1 - normalCdf(z)) + (sd * Math.exp((-z * z) / 2)) / Math.sqrt(2 * Math.PI);
    }
    case "lognormal": {
      const mu = Math.log(spec.median);
      const sigma = Math.max(0, (Math.log(spec.p95) - mu) / Z95);
      if (sigma === 0) return Math.max(spec.median, t);
      const mean = Math.exp(mu + (sigma * sigma) / 2);
      if (t === 0) return mean;
      // E[max(L, t)] = t·Φ(z) + E[L]·Φ(σ − z), z = (ln t − μ)/σ
      const z = (Math.log(t) - mu) / sigma;
      return t * normalCdf(z) + mean * normalCdf(sigma - z);
    }
  }
}

/** The 95th percentile of what sampleLatency draws from a spec, in ms (for a timeout well above it). */
export function p95LatencyMs(spec: LatencySpec | undefined): number {
  if (spec === undefined) return 0;
  if (typeof spec === "number") return clampMs(spec);
  switch (spec.dist) {
    case "fixed":
      return clampMs(spec.ms);
    case "uniform":
      return spec.min + 0.95 * (spec.max - spec.min);
    case "normal":
      return clampMs(spec.mean + Z95 * spec.stddev);
    case "lognormal":
      return clampMs(spec.p95);
  }
}

/** Φ(z), the standard normal CDF (Abramowitz & Stegun 7.1.26 erf, |error| < 1.5e-7). */
function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erf = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/**
 * Accepts a number, a CLI-style string (`200`, `uniform:100:300`, `normal:200:50`,
 * `lognormal:200:800`) or a `{dist, ...}` object.
 */
export function parseLatency(input: unknown): Parsed<LatencySpec> {
  if (isNum(input)) return input >= 0 ? { ok: true, value: input } : { ok: false, error: "latency must be ≥ 0" };
  if (typeof input === "string") {
    // Every failure of a latency written as text says the forms it takes.
    const parsed = parseLatencyString(input);
    return parsed.ok ? parsed : { ok: false, error: `${parsed.error} (want ${LATENCY_FORMS})` };
  }
  if (typeof input !== "object" || input === null) return { ok: false, error: "latency must be a number, string or object" };
  const o = input as Record<string, unknown>;
  switch (o.dist) {
    case "fixed":
      return isNum(o.ms) && o.ms >= 0 ? { ok: true, value: { dist: "fixed", ms: o.ms } } : bad("fixed needs ms ≥ 0");
    case "uniform":
      return isNum(o.min) && isNum(o.max) && o.min >= 0 && o.max >= o.min
        ? { ok: true, value: { dist: "uniform", min: o.min, max: o.max } }
        : bad("uniform needs 0 ≤ min ≤ max");
    case "normal":
      return isNum(o.mean) && isNum(o.stddev) && o.stddev >= 0
        ? { ok: true, value: { dist: "normal", mean: o.mean, stddev: o.stddev } }
        : bad("normal needs mean and stddev ≥ 0");
    case "lognormal":
      return isNum(o.median) && isNum(o.p95) && o.median > 0 && o.p95 >= o.median
        ? { ok: true, value: { dist: "lognormal", median: o.median, p95: o.p95 } }
        : bad("lognormal needs 0 < median ≤ p95");
    default:
      return bad(`unknown latency dist ${JSON.stringify(o.dist)}`);
  }
}

/** The forms a latency takes as text (the mock's --latency, the benches' --latency). */
export const LATENCY_FORMS = "MS, uniform:MIN:MAX, normal:MEAN:SD or lognormal:MEDIAN:P95";

function parseLatencyString(s: string): Parsed<LatencySpec> {
  const parts = s.trim().split(":");
  const nums = parts.slice(1).map(Number);
  if (parts.length === 1) {
    const ms = Number(parts[0]);
    // Number("") is 0 and Number("soon") NaN: neither is a latency someone wrote.
    return parts[0] === "" || Number.isNaN(ms) ? bad(`bad latency "${s}"`) : parseLatency(ms);
  }
  const [a, b] = nums;
  if (nums.length !== 2 || a === undefined || b === undefined) return bad(`bad latency "${s}"`);
  switch (parts[0]) {
    case "uniform":
      return parseLatency({ dist: "uniform", min: a, max: b });
    case "normal":
      return parseLatency({ dist: "normal", mean: a, stddev: b });
    case "lognormal":
      return parseLatency({ dist: "lognormal", median: a, p95: b });
    default:
      return bad(`bad latency "${s}"`);
  }
}

function bad(error: string): Parsed<never> {
  return { ok: false, error: `latency: ${error}` };
}
