// `npm run bench -- --trace`: CPU a task of traced and untraced swarms run in turn on one stack,
// compared so a reader sees whether a 5% difference is shown: each side's median, their ratio, the
// ratios of swarms run next to each other, and bootstrap intervals of both. Pure.
import { createPrng } from "../../dev/mock-model/prng.ts";

/** One measured swarm: whether the room traced it, and the workerd CPU it cost a task. */
export interface TracedRound {
  traced: boolean;
  cpuPerTask: number;
}

export interface RatioInterval {
  low: number;
  high: number;
  /** The share of resampled ratios inside [low, high], e.g. 0.9. */
  level: number;
}

export interface TraceComparison {
  traced: number[];
  untraced: number[];
  tracedMedian: number;
  untracedMedian: number;
  /** tracedMedian / untracedMedian. */
  ratio: number;
  /** Its interval, resampling each side on its own (blind to when each swarm ran). */
  interval: RatioInterval;
  /** traced / untraced of each pair of neighbouring swarms (see pairNeighbours), in the order run. */
  pairRatios: number[];
  /**
   * Their geometric mean; its randomization interval (randomizationInterval: what the coin flips
   * that chose each swarm's side could have paired), and the bootstrap's over the pairs as they
   * fell, for comparison; null without two pairs.
   */
  paired: { ratio: number; interval: RatioInterval; bootstrap: RatioInterval } | null;
  /**
   * Where the interval lies against the target — below it (shown), above it, or across it — the
   * paired one when there is one: a pair's swarms ran side by side, so a drift of the machine's load
   * over the bench moves both, and their ratio, less than it moves either side's figures.
   */
  verdict: "shown" | "exceeded" | "not_settled";
}

export interface CompareOptions {
  /** The ratio traced/untraced to show, e.g. 1.05. */
  target: number;
  /** Bootstrap resamples; default 2,000. */
  resamples?: number;
  /** Default 0.9: the 5th and 95th percentiles of the resampled figures. */
  level?: number;
  /** The resampling PRNG's seed: the same rounds always print the same intervals. */
  seed?: number;
}

/** Null until each side has a round with CPU above zero. */
export function compareTracedRounds(rounds: readonly TracedRound[], options: CompareOptions): TraceComparison | null {
  return compareTracedRuns([rounds], options);
}

/**
 * Several benches' swarms together (`npm run bench:trace-logs`): each side's swarms of every run,
 * and the pairs of each run (a pair never spans two runs).
 */
export function compareTracedRuns(runs: ReadonlyArray<readonly TracedRound[]>, options: CompareOptions): TraceComparison | null {
  const measuredRuns = runs.map((rounds) => rounds.filter((r) => r.cpuPerTask > 0));
  const measured = measuredRuns.flat();
  const traced = measured.filter((r) => r.traced).map((r) => r.cpuPerTask);
  const untraced = measured.filter((r) => !r.traced).map((r) => r.cpuPerTask);
  if (traced.length === 0 || untraced.length === 0) return null;
  const tracedMedian = medianOf(traced);
  const untracedMedian = medianOf(untraced);
  const interval = bootstrap(options, [traced, untraced], ([on, off]) => medianOf(on ?? []) / medianOf(off ?? []));
  const pairRatios = measuredRuns.flatMap((rounds) => pairNeighbours(rounds)).map(([on, off]) => on.cpuPerTask / off.cpuPerTask);
  const paired =
    pairRatios.length < 2
      ? null
      : {
          ratio: geometricMeanOf(pairRatios),
          interval: randomizationInterval(measuredRuns, options),
          bootstrap: bootstrap(options, [pairRatios], ([r]) => geometricMeanOf(r ?? [])),
        };
  const { low, high } = (paired ?? { interval }).interval;
  const verdict = high <= options.target ? "shown" : low > options.target ? "exceeded" : "not_settled";
  return { traced, untraced, tracedMedian, untracedMedian, ratio: tracedMedian / untracedMedian, interval, pairRatios, paired, verdict };
}

/**
 * Each swarm with the latest unpaired one of the other side before it, as brackets pair (a run of
 * one side, then of the other, pairs from the middle out): the matching of the two sides with the
 * least time between pairs' swarms in all, so the machine's load moved less within a pair than
 * across the bench. Returns [traced, untraced] pairs.
 */
export function pairNeighbours(rounds: readonly TracedRound[]): Array<[TracedRound, TracedRound]> {
  const waiting: { traced: TracedRound[]; untraced: TracedRound[] } = { traced: [], untraced: [] };
  const pairs: Array<[TracedRound, TracedRound]> = [];
  for (const round of rounds) {
    const other = round.traced ? waiting.untraced : waiting.traced;
    const partner = other.pop();
    if (partner === undefined) (round.traced ? waiting.traced : waiting.untraced).push(round);
    else pairs.push(round.traced ? [round, partner] : [partner, round]);
  }
  return pairs;
}

/**
 * The interval of the pairs' geometric mean that the bench's own design gives: the randomization
 * (permutation) test of "tracing multiplies a swarm's CPU by θ", inverted. Which side a swarm was
 * on is the room's coin flip, so under that hypothesis each swarm's untraced CPU is known (a traced
 * one's divided by θ), and every other order of the same flips was as likely; θ is in the interval
 * when the pairs' mean as it fell is not in the outer (1 − level) of the means those orders give,
 * paired afresh (ties count half). Unlike the bootstrap over the pairs it assumes neither that the
 * pairs are independent nor that they would have been the same: a drift of the machine's load that
 * other orders would have paired across widens it. In each run every swarm but the last is
 * reshuffled: a run stops when its last swarm's side has its rounds, so that one flip is given
 * (with every order of the others that stop there too). Exact for a constant θ and the bench's own
 * stopping rule; seeded like the bootstrap. Unbounded ends are 0 and Infinity.
 */
export function randomizationInterval(runs: ReadonlyArray<readonly TracedRound[]>, options: CompareOptions): RatioInterval {
  const resamples = options.resamples ?? 2_000;
  const level = options.level ?? 0.9;
  const prng = createPrng(options.seed ?? 1);
  const logs = runs.map((rounds) => rounds.map((r) => Math.log(r.cpuPerTask)));
  const sides = runs.map((rounds) => rounds.map((r) => r.traced));
  // Σ log(traced / untraced) over the pairs of `labels`, and Σ (label's truth: 1 traced-as-traced, −1 swapped, 0 same side).
  const sums = (labels: boolean[][]): { logs: number; sides: number; pairs: number } => {
    const total = { logs: 0, sides: 0, pairs: 0 };
    for (const [run, runLabels] of labels.entries()) {
      const rounds = runLabels.map((traced, i) => ({ traced, cpuPerTask: i }));
      for (const [on, off] of pairNeighbours(rounds)) {
        total.logs += (logs[run]?.[on.cpuPerTask] ?? 0) - (logs[run]?.[off.cpuPerTask] ?? 0);
        total.sides += Number(sides[run]?.[on.cpuPerTask]) - Number(sides[run]?.[off.cpuPerTask]);
        total.pairs += 1;
      }
    }
    return total;
  };
  const observed = sums(sides);
  if (observed.pairs === 0) return { low: 0, high: Number.POSITIVE_INFINITY, level };
  const meanLog = observed.logs / observed.pairs;
  // Each order's pairs' mean of log(u_on / u_off) at log θ = t is a − b·t (u: the untraced CPU θ
  // implies); the observed one's is meanLog − t. Below it exactly when t < (a − meanLog) / (b − 1)
  // (b < 1), or, for b = 1 (the same sides in every pair), when a < meanLog whatever t.
  let alwaysBelow = 0;
  let alwaysTied = 0;
  const crossings: number[] = [];
  const near = (x: number): number => Math.round(x * 1e12) / 1e12;
  for (let i = 0; i < resamples; i += 1) {
    const drawn = sides.map((runSides) => shuffledButLast(runSides, prng.next));
    const { logs: a, sides: b, pairs } = sums(drawn);
    if (pairs === 0) continue;
    if (b === pairs) {
      const gap = near(a / pairs - meanLog);
      if (gap < 0) alwaysBelow += 1;
      else if (gap === 0) alwaysTied += 1;
    } else crossings.push(near((a / pairs - meanLog) / (b / pairs - 1)));
  }
  const n = alwaysBelow + alwaysTied + crossings.length;
  crossings.sort((x, y) => x - y);
  // The share of orders below the observed mean at t (ties half), for t at and between the crossings.
  const shareBelow = (t: number): number => {
    const atOrBelow = countUpTo(crossings, t, true);
    const tied = atOrBelow - countUpTo(crossings, t, false);
    return (alwaysBelow + alwaysTied / 2 + (crossings.length - atOrBelow) + tied / 2) / n;
  };
  const accepted = (t: number): boolean => {
    const share = shareBelow(t);
    return share >= (1 - level) / 2 && share <= 1 - (1 - level) / 2;
  };
  const points = [...new Set(crossings)];
  let low = Number.POSITIVE_INFINITY;
  let high = Number.NEGATIVE_INFINITY;
  const take = (from: number, to: number): void => {
    low = Math.min(low, from);
    high = Math.max(high, to);
  };
  if (points.length === 0) {
    if (accepted(0)) take(Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY);
  } else {
    const first = points[0] ?? 0;
    const last = points[points.length - 1] ?? 0;
    if (accepted(first - 1)) take(Number.NEGATIVE_INFINITY, first);
    if (accepted(last + 1)) take(last, Number.POSITIVE_INFINITY);
    for (const [i, point] of points.entries()) {
      if (accepted(point)) take(point, point);
      const next = points[i + 1];
      if (next !== undefined && accepted((point + next) / 2)) take(point, next);
    }
  }
  // Nothing accepted cannot happen at level < 1 with ties counted half; say "anything" if it does.
  if (low > high) return { low: 0, high: Number.POSITIVE_INFINITY, level };
  return { low: Math.exp(low), high: Math.exp(high), level };
}

/** How many of `sorted` (ascending) are below `value`, or at or below it when `inclusive`. */
function countUpTo(sorted: readonly number[], value: number, inclusive: boolean): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    const at = sorted[mid] ?? 0;
    if (at < value || (inclusive && at === value)) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** `values` with all but the last in a uniformly random order (Fisher–Yates). */
function shuffledButLast<T>(values: readonly T[], random: () => number): T[] {
  const out = [...values];
  for (let i = out.length - 2; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    const swap = out[i] as T;
    out[i] = out[j] as T;
    out[j] = swap;
  }
  return out;
}

/**
 * The percentile bootstrap interval of `statistic` over `samples`: each sample is drawn again with
 * replacement (on its own) `resamples` times, seeded so the same figures print the same interval.
 */
export function bootstrap(options: CompareOptions, samples: ReadonlyArray<readonly number[]>, statistic: (drawn: number[][]) => number): RatioInterval {
  const resamples = options.resamples ?? 2_000;
  const level = options.level ?? 0.9;
  const prng = createPrng(options.seed ?? 1);
  const draw = (values: readonly number[]): number[] => values.map(() => values[Math.floor(prng.next() * values.length)] ?? 0);
  const figures: number[] = [];
  for (let i = 0; i < resamples; i += 1) figures.push(statistic(samples.map(draw)));
  figures.sort((a, b) => a - b);
  const at = (share: number): number => figures[Math.min(figures.length - 1, Math.max(0, Math.floor(share * figures.length)))] ?? Number.NaN;
  return { low: at((1 - level) / 2), high: at(1 - (1 - level) / 2), level };
}

/** The bench's line of one measured swarm (parseTracedRounds reads it back from a saved log). */
export function formatTracedSwarm(swarm: number, traced: boolean, cpuPerTask: number | null): string {
  return `swarm ${swarm} ${traced ? "TRACED" : "untraced"}: cpu/task=${cpuPerTask?.toFixed(3) ?? "n/a"} ms`;
}

/** The measured swarms of a saved `npm run bench -- --trace` output, in the order run. */
export function parseTracedRounds(text: string): TracedRound[] {
  return [...text.matchAll(/^swarm \d+ (TRACED|untraced): cpu\/task=(\d+(?:\.\d+)?) ms/gm)].map((match) => ({
    traced: match[1] === "TRACED",
    cpuPerTask: Number(match[2]),
  }));
}

/** The lines the bench prints. */
export function formatTraceComparison(comparison: TraceComparison, target: number): string[] {
  const ms = (values: readonly number[]) => values.map((v) => v.toFixed(2)).join(" ");
  const x = (v: number) => `${v.toFixed(3)}x`;
  const within = ({ low, high, level }: RatioInterval) => `${Math.round(level * 100)}% interval ${x(low)}–${x(high)}`;
  const { paired } = comparison;
  const verdict = {
    shown: `shown: the whole ${paired === null ? "" : "paired "}interval is at or below ${target}x`,
    exceeded: `not met: the whole ${paired === null ? "" : "paired "}interval is above ${target}x`,
    not_settled: `not settled: the ${paired === null ? "" : "paired "}interval holds ${target}x`,
  }[comparison.verdict];
  return [
    `  traced   cpu/task per swarm (ms, in the order run): ${ms(comparison.traced)}  median ${comparison.tracedMedian.toFixed(3)} ms`,
    `  untraced cpu/task per swarm (ms, in the order run): ${ms(comparison.untraced)}  median ${comparison.untracedMedian.toFixed(3)} ms`,
    `  ratio of the medians traced/untraced: ${x(comparison.ratio)} (bootstrap ${within(comparison.interval)})`,
    paired === null
      ? "  neighbouring pairs: fewer than two"
      : `  neighbouring pairs traced/untraced: ${comparison.pairRatios.map(x).join(" ")}; geometric mean ${x(paired.ratio)} (randomization ${within(paired.interval)}; bootstrap over the pairs ${x(paired.bootstrap.low)}–${x(paired.bootstrap.high)}), lowest–highest ${x(Math.min(...comparison.pairRatios))}–${x(Math.max(...comparison.pairRatios))}`,
    `  target ≤ ${target}x: ${verdict}`,
  ];
}

function geometricMeanOf(values: readonly number[]): number {
  return Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length);
}

/** NaN for no values. */
function medianOf(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}
