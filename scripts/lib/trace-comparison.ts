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
  /** Their geometric mean and its interval, resampling the pairs; null without two pairs. */
  paired: { ratio: number; interval: RatioInterval } | null;
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
    pairRatios.length < 2 ? null : { ratio: geometricMeanOf(pairRatios), interval: bootstrap(options, [pairRatios], ([r]) => geometricMeanOf(r ?? [])) };
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
      : `  neighbouring pairs traced/untraced: ${comparison.pairRatios.map(x).join(" ")}; geometric mean ${x(paired.ratio)} (bootstrap ${within(paired.interval)}), lowest–highest ${x(Math.min(...comparison.pairRatios))}–${x(Math.max(...comparison.pairRatios))}`,
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
