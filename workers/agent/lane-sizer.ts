// How many calls one lane carries, and when it says so: its gate's share of the invocation's
// header slots at its calls' measured timing (src/core/lane-sizing.ts). Before it has timed a call
// it sizes on what the room assumed, on its calls' time to headers and on how long the oldest has
// run past them (untimed-calls.ts); it tells the room at once when a first swarm's first headers
// are slow, and wakes its pull loop when a call's age shows it carries twice what it last said.
// No I/O: the lane's pull loop asks it what to ask for and tells it what each pull was answered.
import { FILL_MIN_MS, toAssumedLaneSlots, toGrowthWaitMs, toLaneSlots, toUntimedLaneSlots, type LaneTiming } from "../../src/core/lane-sizing.ts";
import type { PullRequest } from "../../src/core/swarm-contract.ts";
import { createMovingAverage } from "./moving-average.ts";
import { createUntimedCalls } from "./untimed-calls.ts";

export interface LaneSizerDeps {
  /** Tasks the lane runs at once at most (AGENT_CONCURRENCY). */
  concurrency: number;
  /** The invocation's header slots (0 = no gate) and the lanes that share them. */
  headerSlots: number;
  lanes: number;
  /** LaneContext.assumedSlots and priorLatencyMs: what the room assumed, and on which prior. */
  assumedSlots?: number;
  priorLatencyMs?: number;
  now: () => number;
  /** The invocation's calls queued for a header slot now. */
  gateWaiting: () => number;
  /** The lane's tasks running now. */
  running: () => number;
  /** Wakes the lane's pull loop (a pull goes with what capacity() now says). */
  poke: () => void;
  /** False once the lane takes no new task (it stops, or the room retired it). */
  taking: () => boolean;
  /** The timers it sets (tests pass their own; default setTimeout). */
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
}

export interface LaneSizer {
  /** The slots to fill: what the lane's gate carries now. */
  capacity(): number;
  /** What a pull tells the room the lane carries (PullRequest.slots, for a lane still taking tasks). */
  reportedSlots(): number;
  /** Its calls' mean time to headers and latency once it has timed one (nulls before). */
  timing(): LaneTiming;
  /** A call of an ended task, with its time to headers (null: not timed) and latency. */
  timed(ttfbMs: number | null, latencyMs: number): void;
  /** The lane sent a call (PermitContext.onSent). */
  callSent(): void;
  /** A call of `taskId` has its headers, `elapsedMs` after it was sent (PermitContext.onHeaders). */
  callHeaders(taskId: string, elapsedMs: number): void;
  /** The task's call ended, or the task did (PermitContext.onEnded). */
  callEnded(taskId: string): void;
  /** One of the lane's timers fired `lateMs` late: the event loop's delay, taken off what it times. */
  timerLate(lateMs: number): void;
  /** The pull's `firstHeadersMs` while the room has yet to hear it. */
  untoldFirstHeaders(): Pick<PullRequest, "firstHeadersMs">;
  /** A pull left saying the lane carries `slots`. */
  told(slots: number): void;
  /**
   * Its answer came: whether it granted less than it asked (the window is full, or no task waits),
   * and whether the pull carried the first headers.
   */
  answered(answer: { grantedShort: boolean; toldFirstHeaders: boolean; gateBound?: boolean }): void;
  /** The lane ends: no timer of its own outlives it. */
  close(): void;
}

export function createLaneSizer(deps: LaneSizerDeps): LaneSizer {
  const headerSlots = deps.headerSlots / Math.max(1, deps.lanes);
  const setTimer = deps.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
  const clearTimer = deps.clearTimer ?? ((timer) => clearTimeout(timer as ReturnType<typeof setTimeout>));
  const timing = createTimingAverages();
  /** Its calls' time to headers and the oldest still running past them, until a call is timed. */
  const untimed = createUntimedCalls(deps.now);
  /** How late the lane's timers fire, ms (moving average): the event loop's delay. */
  const loopLag = createMovingAverage(0.2);
  /** How long this lane's first call took to its headers (ms), before any call has ended. */
  let firstHeadersMs: number | null = null;
  /** This lane has sent its first call (no prior only: its first headers are timed from then). */
  let firstCallSent = false;
  /**
   * On no prior, its first call's headers took at least `ms` (they came then, or had not come by
   * then), ms, and whether the room has yet to hear it (PullRequest.firstHeadersMs).
   */
  const slowFirstHeaders = { untold: false, ms: 0 };
  /**
   * The room said it already sends the lanes of the gate's slots that fill the window
   * (PullResponse.gateBound): slow first headers are no news to it, and no pull goes to say them.
   * 1,000 calls of 3 s with headers at the answer, W = 1,000: each of the 167 lanes made one such
   * pull of its three, a sixth of the swarm's Durable Object requests.
   */
  let roomGateBound = false;
  /** The slots this lane's last pull said it carries (0: none yet), and whether it was granted less than it asked. */
  let toldSlots = 0;
  let grantedShort = false;
  /** The timer watchGrowth set, if one is pending. */
  let growthTimer: unknown = null;
  let closed = false;

  const untimedNow = (): boolean => timing.current().ttfbMs === null;
  /**
   * The time to headers a lane sizes itself on until it has timed a call. On a prior, its first
   * call's: the headers that confirm the prior, at once, as the prior's lanes were tuned (a mean
   * moves with a loaded start's later headers, and would shrink a lane the prior sized). Without
   * one, its calls' mean: the first call's pays the isolate's first connection.
   */
  const untimedHeadersMs = (): number | null => (deps.priorLatencyMs === undefined ? untimed.headersMs() : firstHeadersMs);

  // What the lane asks for and reports for the room's ticket sizing: what its header slots can carry
  // at the measured TTFB (a lane of a batch carries its share of the invocation's slots). Before it
  // has timed a call, it asks for what the room assumed (header-bound lanes by default), so a first
  // lane never takes a window its gate cannot carry while the lanes that could are on their way.
  const capacity = (): number => {
    const measured = timing.current();
    if (measured.ttfbMs === null) {
      return toUntimedLaneSlots({
        concurrency: deps.concurrency,
        headerSlots,
        assumedSlots: deps.assumedSlots,
        priorLatencyMs: deps.priorLatencyMs,
        headersMs: untimedHeadersMs(),
        runningForMs: untimed.runningForMs(),
      });
    }
    // Never less than what it carries now (its running calls, but those queued at the gate): on a
    // machine whose CPU is saturated, headers are seen late and the measured TTFB swells, which would
    // shrink a lane that is carrying its calls fine and bring the room more lanes, and more CPU.
    const carried = deps.lanes === 1 ? deps.running() - deps.gateWaiting() : 0;
    // The headers were there before JavaScript saw them: a call's measured TTFB includes how late
    // the event loop runs (its timers' lateness), which production's limit, counted by the runtime,
    // does not. Sized on the swollen TTFB, a saturated machine would ask for more lanes, which
    // swell it further.
    const ttfbMs = Math.max(1, measured.ttfbMs - (loopLag.current() ?? 0));
    return Math.max(carried, toLaneSlots(deps.concurrency, headerSlots, { ...measured, ttfbMs }));
  };

  /**
   * No prior, and headers slow enough that lanes of the gate's 6 are what fills the window: the
   * room hears it now, not when a call has ended. Less the event loop's lateness, as the lane's
   * slots count it: a busy machine sees headers late. Once. Returns how far short of FILL_MIN_MS
   * the wait still is, ms (0: told, or nothing to tell).
   */
  const noteSlowFirstHeaders = (elapsedMs: number): number => {
    if (deps.priorLatencyMs !== undefined || slowFirstHeaders.ms > 0 || !untimedNow()) return 0;
    const short = FILL_MIN_MS - (elapsedMs - (loopLag.current() ?? 0));
    if (short > 0) return short;
    Object.assign(slowFirstHeaders, { untold: !roomGateBound, ms: Math.round(elapsedMs) });
    if (!roomGateBound) deps.poke();
    return 0;
  };

  /**
   * Before the lane has timed a call, with headers in and calls running past them: wakes the pull
   * loop when the oldest call's age shows the gate carries twice what the lane runs and last said
   * it carries (capacity(), toUntimedLaneSlots), so a window of long calls with early headers fills
   * in a few doublings of the time to headers, not a whole call later: a few pulls a lane in all.
   * None while its last pull was granted less than it asked (the window is full, or no task
   * waits): until its tasks end, a pull for more would get nothing. None after it told the room
   * its first headers were slow (`slowFirstHeaders`): the room then sends the lanes of 6 that fill
   * the window at once, and growing them only adds pulls (1,000 calls of 3 s with headers at
   * 500 ms: 1.16 DO requests a task against 0.85). At most one timer; the pull it brings sets the next.
   */
  const watchGrowth = (): void => {
    if (closed || growthTimer !== null || grantedShort || slowFirstHeaders.ms > 0 || !deps.taking()) return;
    if (!untimedNow() || untimed.size() === 0 || Math.max(deps.running(), toldSlots) >= deps.concurrency) return;
    const target = (): number => Math.min(deps.concurrency, 2 * Math.max(1, deps.running(), toldSlots));
    const waitMs = toGrowthWaitMs({ target: target(), headerSlots, headersMs: untimedHeadersMs(), runningForMs: untimed.runningForMs() });
    if (waitMs === null) return;
    const recheck = (): void => {
      growthTimer = null;
      if (closed || !untimedNow() || grantedShort || !deps.taking()) return;
      if (capacity() < target()) watchGrowth();
      // Calls wait at the gate: more tasks would only wait there too. Look again a time to headers on.
      else if (deps.gateWaiting() > 0) growthTimer = setTimer(recheck, Math.max(50, untimedHeadersMs() ?? 0));
      else deps.poke();
    };
    growthTimer = setTimer(recheck, Math.max(10, waitMs));
  };

  return {
    capacity,
    /**
     * Until it has timed a call, at least what the room assumed, so that a lane waiting for its
     * first headers (on a prior) brings no other lane.
     */
    reportedSlots: () => (untimedNow() ? Math.max(capacity(), toAssumedLaneSlots(deps.concurrency, deps.assumedSlots)) : capacity()),
    timing: () => timing.current(),
    timed: (ttfbMs, latencyMs) => timing.add(ttfbMs, latencyMs),
    callSent() {
      // No prior: if the first call has no headers FILL_MIN_MS after it was sent, that is the news.
      if (firstCallSent || deps.priorLatencyMs !== undefined) return;
      firstCallSent = true;
      const sentAt = deps.now();
      // Timers fire late on a busy loop, and that lateness is taken off: checked again, until the
      // headers come, for as long as the wait falls short.
      const check = (): void => {
        if (firstHeadersMs !== null || closed) return;
        const short = noteSlowFirstHeaders(deps.now() - sentAt);
        if (short > 0) setTimer(check, Math.max(10, short));
      };
      setTimer(check, FILL_MIN_MS);
    },
    callHeaders(taskId, elapsedMs) {
      // Until a call is timed, one past its headers shows how long calls run at least (capacity()).
      if (untimedNow()) untimed.headers(taskId, elapsedMs);
      if (firstHeadersMs === null) {
        firstHeadersMs = elapsedMs;
        // A prior of early headers confirmed: the lane asks at once for what it now carries. (Headers
        // that come with the answer add a slot or two, which the pull with that answer asks for.)
        if (untimedNow() && capacity() >= 2 * Math.max(1, deps.running())) deps.poke();
        noteSlowFirstHeaders(elapsedMs);
      }
      watchGrowth();
    },
    callEnded: (taskId) => untimed.ended(taskId),
    timerLate: (lateMs) => loopLag.add(lateMs),
    untoldFirstHeaders: () => (slowFirstHeaders.untold ? { firstHeadersMs: slowFirstHeaders.ms } : {}),
    told(slots) {
      toldSlots = slots;
    },
    answered(answer) {
      if (answer.gateBound === true) roomGateBound = true;
      if (answer.toldFirstHeaders || roomGateBound) slowFirstHeaders.untold = false;
      grantedShort = answer.grantedShort;
      watchGrowth();
    },
    close() {
      closed = true;
      if (growthTimer !== null) clearTimer(growthTimer);
      growthTimer = null;
    },
  };
}

/** Moving averages of recent calls' time to headers and latency (what sizes the lane's slots). */
function createTimingAverages(): { add(ttfbMs: number | null, latencyMs: number): void; current(): LaneTiming } {
  const ttfb = createMovingAverage(0.1);
  const latency = createMovingAverage(0.1);
  return {
    add(ttfbMs, latencyMs) {
      if (ttfbMs === null) return;
      ttfb.add(ttfbMs);
      latency.add(latencyMs);
    },
    current: () => ({ ttfbMs: ttfb.current(), latencyMs: latency.current() }),
  };
}
