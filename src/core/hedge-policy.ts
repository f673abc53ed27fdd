// Hedged requests ("The Tail at Scale"): when a call's backup is due, and whether the swarm may
// spend one. No I/O. The SwarmRoom feeds it the latencies it knows; the lane only asks.
import { z } from "zod";
import { percentile } from "./percentile.ts";

/** `limits.hedge` (docs/configuration.md): off when absent. */
export const HedgeSpecSchema = z.strictObject({
  /**
   * When a call still without its whole answer gets its backup: a percentile of the swarm's call
   * latencies (calls still running counted at their elapsed time), or fixed milliseconds.
   */
  after: z.union([z.enum(["p50", "p75", "p90", "p95", "p99"]), z.number().int().min(10).max(600_000)]).default("p95"),
  /** Backups the swarm may send, as a share of its tasks (0.05: at most 5 backups per 100 tasks). */
  max_extra: z.number().min(0).max(0.5).default(0.05),
});
export type HedgeSpec = z.infer<typeof HedgeSpecSchema>;

/**
 * Finished calls the percentile needs before any backup: below this a p95 is one of the first
 * few calls (usually a fast one) and would hedge half the swarm.
 */
export const HEDGE_MIN_SAMPLES = 20;

/** The latencies a threshold is computed from: finished calls, and the calls still running now. */
export interface LatencySample {
  /** Latencies (ms) of calls that ended with an answer. */
  finished: readonly number[];
  /** How long (ms) each call still running has run so far: a lower bound of its latency. */
  running: readonly number[];
}

/**
 * The backup delay in ms, or null while there are too few finished calls to say. A running call
 * counts at its elapsed time (its latency is at least that): the first calls to finish are the fast
 * ones, and a percentile of them alone would send backups for half the swarm's ordinary calls.
 */
export function toHedgeAfterMs(spec: HedgeSpec, sample: LatencySample): number | null {
  if (typeof spec.after === "number") return spec.after;
  if (sample.finished.length < HEDGE_MIN_SAMPLES) return null;
  const p = Number(spec.after.slice(1));
  const at = percentile([...sample.finished, ...sample.running], p);
  return at === null ? null : Math.max(1, Math.round(at));
}

/** The most backups a swarm of `tasks` may send. */
export function toHedgeLimit(spec: HedgeSpec, tasks: number): number {
  return Math.floor(spec.max_extra * tasks + 1e-9);
}

export interface HedgeAsk {
  limit: number;
  sent: number;
  /**
   * Tasks not started yet (not handed out, or held by a lane as standby): 0 is the swarm's tail,
   * where a straggler decides the wall time.
   */
  waiting: number;
  window: number;
  /** The mean latency of the finished calls (ms), null before any: how soon the waiting tasks go out. */
  meanLatencyMs: number | null;
  /** How long the call to back up has run (ms). */
  elapsedMs: number;
  /**
   * Which of its asks this is, in multiples of the delay the call has run: 1 at its first ask, 2
   * and 4 at the later ones (a call refused asks again when it has become a worse straggler).
   */
  delays: number;
  /** Of the calls now running short of the delay, how many will likely run past it (toExpectedStragglers). */
  expectedStragglers: number;
}

/**
 * Backups a first ask leaves, beyond what the calls still short of the delay will likely need: one
 * for a worse straggler (a call at twice the delay), from a limit of 10 up. `npm run sim:hedging`:
 * at 1,000 tasks (50 backups) it takes the p99 wall from 9.00 s to 8.63 s; at 200 tasks (10), the
 * mean from 3.76 s to 3.68 s; but a swarm of 20 tasks that kept its one backup so took 1.13× the
 * mean wall of one that spent it at once, and 100 tasks in one round (5) a 1.09× median.
 */
export function toKeptForWorseStraggler(limit: number): number {
  return limit >= 10 ? 1 : 0;
}

/**
 * How many of the calls still running short of the delay will likely run past it: each counted at
 * the share of finished calls that ran past the delay among those that ran as long as it has (one,
 * when no finished call ran that long; none while no call has finished, as with a fixed delay at
 * the start: nothing to go by). The later a call started, the later its own end, so these are the
 * stragglers that decide the wall; a first ask that would leave them short is refused.
 * `finishedSorted`: finished calls' latencies, ascending.
 */
export function toExpectedStragglers(finishedSorted: readonly number[], runningMs: readonly number[], afterMs: number): number {
  if (finishedSorted.length === 0) return 0;
  const longerThan = (ms: number): number => finishedSorted.length - upperBound(finishedSorted, ms);
  const pastDelay = longerThan(afterMs);
  let expected = 0;
  for (const elapsed of runningMs) {
    if (elapsed >= afterMs) continue;
    const asLong = longerThan(elapsed);
    expected += asLong === 0 ? 1 : pastDelay / asLong;
  }
  return expected;
}

/** The first index whose value is greater than `x` in an ascending list. */
function upperBound(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Whether a backup may go now. A backup pays off where a straggler would end after the rest of the
 * swarm: once no task waits, the last stragglers are the swarm's wall time. While tasks wait, a
 * straggler holds one slot of the window and the others keep the swarm moving, so a backup saves
 * little, unless the call has already run as long as the waiting tasks will take to go out
 * (waiting × mean latency / window): it will likely still run when they have. The rest of the
 * limit is kept for the tail (a simulation of 1,000 lognormal 300/1500 calls at W = 100: 0.81× the
 * unhedged wall this way, 0.89× when the limit also went to stragglers before the tail).
 *
 * A call's first ask is paced: granted only while the backups left after it cover the calls still
 * short of the delay that will likely pass it, and one more (toKeptForWorseStraggler). First come,
 * first served, the calls that pass the delay first (the earliest started) spent the limit, and a
 * slow call started among the last ran unhedged: the bench's early-headers hedged swarm took 0.98×
 * the pool instead of 0.62–0.68× in some runs (1.66× on the mock's seed 236, whose 8.3 s draw comes
 * last). At p95 and `max_extra` 0.05, about as many calls pass the delay as the limit allows. Its
 * later asks (twice, four times the delay) are not paced. `npm run sim:hedging` (this policy, in
 * virtual time; 600 swarms of lognormal 300/1500 calls, a 1.3 s delay as the bench's swarms had),
 * paced against first come, first served: 1,000 tasks at W = 100, mean wall 0.98×, p90 0.93×, p99
 * 0.81×; 400 tasks, mean 0.87×, p90 0.78×; 200 at W = 50, mean 0.90×, p90 0.73×; 1,500 in one
 * round, 0.95×; a swarm whose calls all start together is not changed (they pass the delay together).
 */
export function mayHedge(ask: HedgeAsk): { ok: true } | { ok: false; reason: "limit" | "kept_for_stragglers" | "kept_for_tail" } {
  if (ask.sent >= ask.limit) return { ok: false, reason: "limit" };
  if (ask.delays < 2 && ask.limit - ask.sent - 1 < ask.expectedStragglers + toKeptForWorseStraggler(ask.limit)) {
    return { ok: false, reason: "kept_for_stragglers" };
  }
  if (ask.waiting === 0) return { ok: true };
  if (ask.meanLatencyMs !== null && ask.elapsedMs >= (ask.waiting * ask.meanLatencyMs) / Math.max(1, ask.window)) return { ok: true };
  return { ok: false, reason: "kept_for_tail" };
}

/** The mean of a list of latencies, null for none. */
export function toMeanLatencyMs(latencies: readonly number[]): number | null {
  if (latencies.length === 0) return null;
  let sum = 0;
  for (const ms of latencies) sum += ms;
  return sum / latencies.length;
}
