// Standby tasks: a lane holds a few granted tasks beyond its window slots, so that a slot freed by
// a task that ends is filled at once, not one pull round trip later. The SwarmRoom still owns the
// window: a standby task is leased (and its budget reserved) but outside the window, and the lane
// starts one only in the place of a task of its own that ended for good, which the room learns
// from the same pull that reports that end. Pure arithmetic and rules. No I/O.
import { percentiles } from "./percentile.ts";
import type { TaskOutcome } from "./swarm-contract.ts";

/** A lane never holds more standby tasks than this, whatever its timing says. */
export const STANDBY_MAX = 64;

/**
 * With no timing measured yet (the first pull), a lane asks for this share of what it carries: all
 * of it. The tasks of a first grant start together and end together, a whole wave, so each needs a
 * standby task to take its slot. With half, a header-bound lane of 6 refilled 3 slots at its first
 * round's end and the other 3 waited for the pull that its first outcomes sent (1,000 × 200 ms,
 * W = 100, headers with the answer: the second round's slots waited 30–50 ms for a call).
 */
const FIRST_PULL_SHARE = 1;

/**
 * Never fewer than this share of the running tasks: tasks started together (a swarm's first
 * grant) end together, in waves that the mean rate of completions does not see.
 */
const WAVE_SHARE = 1 / 2;

/** Cover this many pull round trips: a pull may wait behind another, or be slow. */
const ROUND_TRIPS_COVERED = 2;

/**
 * A lane holds standby for at most this many times the slots it carries. A lane its header gate
 * keeps small (6 calls) waits for two slots' worth of outcomes (up to SMALL_LANE_COALESCE_MAX_MS)
 * before it pulls, and its slots keep ending while the pull is on its way: held to its slots, it ran
 * out of standby tasks before each pull, and its freed slots waited for the pull (1,000 × lognormal
 * 300/1500, W = 100, headers with the answer: 82–90 calls in flight of 100 between the swarm's ramp
 * and its tail, against the pool's 98–100). Three slots' worth cover the wait and a round trip.
 * The room grants a lane no more than this many times what it will run (a lane asks for what it
 * would run had it got every task it wanted).
 */
export const STANDBY_SLOTS_SHARE = 3;

export interface StandbyInput {
  /** Tasks the lane may run at once (AGENT_CONCURRENCY). */
  concurrency: number;
  /** Tasks the lane carries (its header slots can hold at the measured timing); absent: its concurrency. */
  slots?: number;
  /** Tasks running on the lane now. */
  running: number;
  /** Mean latency of the lane's recent calls, ms (null: none measured yet). */
  latencyMs: number | null;
  /** Mean time from building a pull to its answer, ms, plus how long outcomes wait for company. */
  refillMs: number | null;
}

/**
 * How many standby tasks a lane should hold: what its running tasks complete, on average, over
 * two refills (completions arrive at running / latency per ms), and at least half its running
 * tasks (waves) and 1 while tasks run; at most STANDBY_MAX, its concurrency and STANDBY_SLOTS_SHARE
 * times its slots.
 * Before any timing: what it carries (FIRST_PULL_SHARE).
 */
export function standbyTarget(input: StandbyInput): number {
  const concurrency = Math.max(0, Math.floor(input.concurrency));
  const carried = Math.min(concurrency, Math.max(0, Math.floor(input.slots ?? concurrency)));
  const cap = Math.min(STANDBY_MAX, concurrency, STANDBY_SLOTS_SHARE * carried);
  if (cap === 0) return 0;
  if (input.latencyMs === null || input.refillMs === null) return Math.min(cap, Math.ceil(carried * FIRST_PULL_SHARE));
  if (input.running <= 0) return 0;
  const completions = (input.running / Math.max(1, input.latencyMs)) * input.refillMs * ROUND_TRIPS_COVERED;
  return Math.max(1, Math.min(cap, Math.ceil(Math.max(completions, input.running * WAVE_SHARE))));
}

/**
 * The most standby tasks one lane is granted now: its share of the tasks not yet started — those
 * the room has yet to hand out and those lanes hold as standby — spread over the swarm's open
 * lanes, less what it holds already. A lane runs its standby tasks only in the places of its own
 * tasks as they end, so near a swarm's end a lane holding more than its share runs them a few at a
 * time while other lanes have room: 200 tasks at W = 100 over 17 lanes of 6, each holding up to 18,
 * left the last 100 with 23–36 calls in flight for 2 s where the pool had drained.
 *
 * Counted over what waits alone, the share shrank with every grant, so the lanes that pulled first
 * held the most: 1,000 × 200 ms, W = 100, headers with the answer, the 10 lanes of 6 that pulled
 * while 171 to 100 tasks were left got 11, 11, 10, 9, 9, 8, 8, 7, 7 and 2 standby tasks, and ran
 * them into the last round while other lanes' slots stood empty.
 */
export function standbyShare(input: { waiting: number; held: number; laneHeld: number; openLanes: number }): number {
  const notStarted = Math.max(0, input.waiting) + Math.max(0, input.held);
  return Math.max(0, Math.ceil(notStarted / Math.max(1, input.openLanes)) - Math.max(0, input.laneHeld));
}

/**
 * The most standby tasks a grant may hand out: the pending tasks the window's free room could not
 * take now (`pending`: what waits once this grant's tasks in the window are out; `freeRoom`: the
 * window's room this grant leaves, as far as other lanes have slots free for it). A standby task
 * waits in its lane for one of the lane's own tasks to end, so one granted while the window has
 * room for it sits out of the window that long. Granted to lanes whose pulls met their want while the window was far from full, standby
 * tasks held what the other lanes needed: 1,000 calls of 3 s at W = 1,000 (8 lanes of 128, early
 * headers) ran 686 at once and the other 314 a call later, 2.1x ideal and 1.6x the pool's wall.
 * When more tasks wait than the window holds, the bound is that excess and rarely binds.
 */
export function standbyPastRoom(input: { pending: number; freeRoom: number }): number {
  return Math.max(0, Math.floor(input.pending) - Math.max(0, Math.floor(input.freeRoom)));
}

/**
 * Finished calls the room needs before it may call a swarm's calls uneven. With fewer it counts
 * them even, the cheaper guess for the last window (tailStandbyRoom): wrongly even, a freed slot
 * of a swarm's first rounds waits for a pull (a small lognormal swarm, 200 × 300/1500 with headers
 * at 484 ms: 0.61 → 0.76 SwarmRoom requests a task, the same wall); wrongly uneven, a swarm of
 * two windows ran a third round (200 calls of 1 s with headers at the answer, W = 100: the first
 * lanes to report round one's end took the rest as standby while 11 lanes of 17 stood empty, 1.6×
 * ideal and 1.4× the pool's wall, against 1.07× and 0.95×).
 */
export const EVEN_CALLS_MIN_SAMPLES = 20;

/**
 * Calls are even when the slowest tenth of the newest ends took at most this many times the median:
 * a fixed latency (1.0–1.1 on this machine) is, lognormal 300/1500 (3.5; 2.2 with headers at
 * 484 ms) is not.
 */
export const EVEN_CALLS_P90_OVER_P50 = 1.5;

/**
 * Whether the latencies (ms) of a swarm's newest finished calls are even (EVEN_CALLS_P90_OVER_P50);
 * fewer than EVEN_CALLS_MIN_SAMPLES of them show nothing, and count as even.
 */
export function areCallsEven(latenciesMs: readonly number[]): boolean {
  if (latenciesMs.length < EVEN_CALLS_MIN_SAMPLES) return true;
  const [p50 = null, p90 = null] = percentiles(latenciesMs, [50, 90]);
  return p50 !== null && p90 !== null && p50 > 0 && p90 <= EVEN_CALLS_P90_OVER_P50 * p50;
}

/**
 * The most standby tasks one lane may still get: the tasks the room has yet to hand out less a
 * window's worth, and no more than the lane will run (`laneRuns`), when the swarm's calls are even;
 * otherwise no bound (Infinity).
 *
 * With even calls, a lane's standby tasks set when it ends: each runs a whole call after the slot
 * it waits for frees. Granted from pulls made at different times, the last window's standby tasks
 * left some lanes a round more than others: 1,000 calls of 666 ms, headers with the answer, W = 100
 * (17 lanes of 6) ended with 66 calls in flight, then 17, then 3, over the 1.3 s after the pool had
 * drained (1.08× its wall). Kept in the room, the last window goes to each lane as its slots free,
 * and the lanes end together. With uneven calls each task's own latency sets when it ends, and the
 * same rule only adds pulls: a lane with no standby pulls for each slot that frees, and 1,000 ×
 * lognormal 300/1500 with headers at 484 ms made 0.246–0.251 SwarmRoom requests a task with it,
 * against 0.21 without.
 *
 * A lane starts its standby tasks a round after the tasks it runs, in their places, so with even
 * calls more than it runs would end it a round after the others. At a round's end the lanes that
 * report first took that much: 300 calls of 500 ms with headers at the answer, W = 100 (17 lanes
 * of 6), three lanes took 11–12 standby tasks each from the 31 past the last window (what waited
 * still counted the places other lanes had freed and not yet reported) and ran a fourth round,
 * 1.19× the pool's wall; held to one round each, 0.99×.
 */
export function tailStandbyRoom(input: { waiting: number; window: number; laneRuns: number; evenCalls: boolean }): number {
  if (!input.evenCalls) return Number.POSITIVE_INFINITY;
  const pastTheWindow = Math.floor(input.waiting) - Math.max(0, Math.floor(input.window));
  return Math.max(0, Math.min(pastTheWindow, Math.floor(input.laneRuns)));
}

/**
 * May a standby task take the slot of a task that ended with this outcome? Only if the end is for
 * good: a success, or a failure that is never retried. A retryable failure or a deferral keeps its
 * place in the window (the task waits there to retry), so its slot is not free.
 */
export function freesSlot(outcome: TaskOutcome): boolean {
  if (outcome.kind === "succeeded") return true;
  if (outcome.kind === "failed") return !outcome.retryable;
  return false;
}
