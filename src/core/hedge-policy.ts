// Hedged requests ("The Tail at Scale"): when a call's backup is due, and whether the swarm may
// spend one. No I/O. The SwarmRoom feeds it the latencies it knows; the lane only asks.
import { z } from "zod";
import { censoredPercentile, percentile } from "./percentile.ts";

/** `limits.hedge` (docs/configuration.md): off when absent. */
export const HedgeSpecSchema = z.strictObject({
  /**
   * When a call still without its whole answer gets its backup: a percentile of the swarm's call
   * latencies (calls still running counted as lasting at least their elapsed time), or fixed milliseconds.
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
 * The backup delay in ms, or null while there are too few finished calls to say. A running call's
 * latency is at least its elapsed time: the percentile is the Kaplan–Meier one
 * (`censoredPercentile`), which counts it as not ended up to that time. The first calls to finish
 * are the fast ones, so a percentile of them alone would send backups for half the swarm's
 * ordinary calls; counted as if they had ended at their elapsed time, running calls
 * still put the delay below the true percentile (1.2–1.3 s against a p95 of 1.5 s, 1,000 lognormal
 * 300/1500 calls at W = 100, early headers: about 7% of calls asked, the limit went first come,
 * first served, and a late straggler ran unhedged in 4 of 14 runs). The estimate is high where
 * the room still counts calls whose outcomes a lane holds to report together (headers with the
 * answer: 1.5–2.6 s mid-swarm), which the lane's ask at the tail's beginning covers (sendHedged).
 */
export function toHedgeAfterMs(spec: HedgeSpec, sample: LatencySample): number | null {
  if (typeof spec.after === "number") return spec.after;
  if (sample.finished.length < HEDGE_MIN_SAMPLES) return null;
  const p = Number(spec.after.slice(1));
  // Too much still running for it to say (a swarm's first calls, or a window of long ones): the
  // percentile of the finished and running calls together, as if the running ones ended now, which
  // is at most the true one. A call started while no delay is in force never gets a backup
  // (sendHedged), and a straggler among them set the wall: with no delay until the estimate could
  // say, 3 of 4 runs with headers that come with the answer took 0.94× the pool, not 0.72×.
  const at = censoredPercentile(sample.finished, sample.running, p) ?? percentile([...sample.finished, ...sample.running], p);
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
}

/**
 * Whether a backup may go now. A backup pays off where a straggler would end after the rest of the
 * swarm: once no task waits, the last stragglers are the swarm's wall time. While tasks wait, a
 * straggler holds one slot of the window and the others keep the swarm moving, so a backup saves
 * little, unless the call has already run as long as the waiting tasks will take to go out
 * (waiting × mean latency / window): it will likely still run when they have. The rest of the
 * limit is kept for the tail (a simulation of 1,000 lognormal 300/1500 calls at W = 100: 0.81× the
 * unhedged wall this way, 0.89× when the limit also went to stragglers before the tail).
 */
export function mayHedge(ask: HedgeAsk): { ok: true } | { ok: false; reason: "limit" | "kept_for_tail" } {
  if (ask.sent >= ask.limit) return { ok: false, reason: "limit" };
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
