// How many tasks one consumer lane runs at once, and how many tickets (lanes) a swarm's window
// needs. Pure arithmetic over the platform's connection limit and measured call timing. No I/O.

/**
 * Production gives an invocation 6 connections waiting for response headers (a slot frees when the
 * headers arrive): developers.cloudflare.com/workers/platform/limits/#simultaneous-open-connections.
 */
export const HEADER_SLOTS_PER_INVOCATION = 6;

/** Consumer invocations a queue runs at once (developers.cloudflare.com/queues/platform/limits). */
export const MAX_TICKETS_PER_SWARM = 250;

export interface LaneTiming {
  /** Mean time to response headers of recent calls, ms (null: none measured yet). */
  ttfbMs: number | null;
  /** Mean whole-call latency of recent calls, ms. */
  latencyMs: number | null;
}

/**
 * Tasks a lane can keep running: its concurrency, or fewer when the header gate binds. Each call
 * holds a header slot for its TTFB out of its latency, so `headerSlots` slots carry at most
 * headerSlots × latency / ttfb calls at once. `headerSlots` 0 = no gate.
 */
export function toLaneSlots(concurrency: number, headerSlots: number, timing: LaneTiming): number {
  const limit = Math.max(1, Math.floor(concurrency));
  if (headerSlots <= 0 || timing.ttfbMs === null || timing.latencyMs === null || timing.ttfbMs <= 0) return limit;
  const carried = Math.floor((headerSlots * Math.max(timing.latencyMs, timing.ttfbMs)) / timing.ttfbMs);
  return Math.max(1, Math.min(limit, carried));
}

/** What the room assumed a lane carries (Ticket.slots; absent: its concurrency), within its concurrency. */
export function toAssumedLaneSlots(concurrency: number, assumedSlots?: number): number {
  const limit = Math.max(1, Math.floor(concurrency));
  return Math.max(1, Math.min(limit, Math.floor(assumedSlots ?? limit)));
}

/**
 * Slots of a lane that has not yet timed a call from start to end. Without a prior: what the room
 * assumed (`assumedSlots`; header-bound lanes by default). With one (`priorLatencyMs`: lanes of an
 * earlier swarm of the same tenant and model carried `assumedSlots` with calls of that latency):
 * the gate's slots until the lane's first response headers arrive, then what a call whose headers
 * take `headersMs` carries at the prior's latency. A prior that no longer holds (the upstream
 * now sends its headers with the answer) costs one call's time on the gate's slots, never a window
 * queued behind a gate of 6.
 *
 * A call that had its headers and has not answered yet (`runningForMs`: the longest such a call of
 * the lane has run, ms) shows the latency is at least that long, prior or not: the lane carries at
 * least what the gate carries at that latency. A tenant's first swarm of 1,000 calls of 3 s with
 * headers at once, W = 1,000, ran its first lanes' 6 each for a whole call before one was timed
 * (2.6–3.3× the pool's wall); on this bound a lane whose headers took 10 ms knows within 20 ms that
 * it carries 12, and doubles again each time its calls' age does.
 */
export function toUntimedLaneSlots(input: {
  concurrency: number;
  headerSlots: number;
  assumedSlots?: number | undefined;
  priorLatencyMs?: number | undefined;
  headersMs: number | null;
  runningForMs?: number | undefined;
}): number {
  const assumed = toAssumedLaneSlots(input.concurrency, input.assumedSlots);
  if (input.headerSlots <= 0) return assumed;
  const prior = input.priorLatencyMs !== undefined;
  if (input.headersMs === null) return prior ? Math.max(1, Math.min(assumed, Math.floor(input.headerSlots))) : assumed;
  const ttfbMs = Math.max(1, input.headersMs);
  const latencyMs = Math.max(input.priorLatencyMs ?? 0, input.runningForMs ?? 0, ttfbMs);
  const carried = toLaneSlots(input.concurrency, input.headerSlots, { ttfbMs, latencyMs });
  if (prior) return carried;
  // No prior: the room's assumption stands until a running call has outlasted its headers.
  return (input.runningForMs ?? 0) > ttfbMs ? Math.max(assumed, carried) : assumed;
}

/**
 * How long until a lane that has not timed a call carries `target` slots on the bound its running
 * calls give (toUntimedLaneSlots): its oldest call past its headers must have run `target × ttfb /
 * headerSlots` ms. 0 when it has; null without a gate or a time to headers to go by.
 */
export function toGrowthWaitMs(input: { target: number; headerSlots: number; headersMs: number | null; runningForMs: number }): number | null {
  if (input.headerSlots <= 0 || input.headersMs === null) return null;
  const neededMs = (Math.max(1, input.target) * Math.max(1, input.headersMs)) / input.headerSlots;
  return Math.max(0, Math.ceil(neededMs - Math.max(0, input.runningForMs)));
}

/**
 * The share of a swarm's expected time (its rounds of calls: tasks / window × latency) its window
 * may take to fill at the start. A lane sized for the steady state fills over one call's latency
 * (its gate starts 6 calls a time to headers, and it carries 6 × latency / TTFB), which costs a
 * swarm of ten windows or more a twentieth of its time, but half of a swarm that fans out once.
 */
export const FILL_SHARE = 0.1;

/**
 * The shortest fill worth lanes for. A window that fills within a quarter second saves at most an
 * eighth of one on the wall, and each lane opened for it is a queue message, an executor's start
 * and its pulls. On this machine the pool's own ramp to 1,000 calls takes 370–390 ms and a swarm's
 * first upstream request comes 150–600 ms after its submit, and a fan-out of 1,000 × 200 ms with
 * early headers (20 ms as the lanes measured them) sized to fill within 20 ms opened 125–167 lanes
 * where 12–18 had carried it: 1.15–1.53× the pool's wall against 0.67–0.77×.
 */
export const FILL_MIN_MS = 250;

/**
 * What a ticket counts for while the window fills at the start, on an earlier swarm's lanes (their
 * slots, latency and time to headers): enough lanes that the window fills within FILL_SHARE of the
 * swarm's expected time, or one time to headers or FILL_MIN_MS when longer, each lane starting its gate's
 * `headerSlots` calls a time to headers. At least the gate's slots (a lane starts as many at once),
 * at most the steady state's `slots`, which ten rounds or more reach. A swarm of 1,000 calls of 3 s
 * with headers at 500 ms, W = 1,000, counted each lane for 36 and opened 28: they started 168 calls
 * a time to headers, filled the window over 2.5 s and took 1.73× the pool's wall; counted for 6, 167
 * lanes fill it in one time to headers. With headers that come with the answer both are 6.
 */
export function toFillSlots(input: { slots: number; headerSlots: number; ttfbMs: number; latencyMs: number; rounds: number }): number {
  const slots = Math.max(1, Math.floor(input.slots));
  const gate = Math.floor(input.headerSlots);
  if (gate <= 0 || input.ttfbMs <= 0) return slots;
  const within = Math.max(input.ttfbMs, input.latencyMs * Math.max(1, input.rounds) * FILL_SHARE, FILL_MIN_MS);
  return Math.max(1, Math.min(slots, Math.max(gate, Math.floor((gate * within) / input.ttfbMs))));
}

/**
 * The time to headers a lane's gate is held for, from what lanes reported: their measured mean, but
 * no more than their slots imply (`headerSlots × latency / slots`). A lane sizes its slots on its
 * TTFB less its event loop's lateness (run-lane.ts), while the mean it reports includes it: on this
 * 2-core machine, lanes with early headers measured 20–270 ms to headers at W = 1,000, and sized on
 * that the room would open a lane for every 6 calls. Slots a lane's concurrency capped imply a
 * later time than the real one, so the measured mean, when it is known, bounds it the other way.
 */
export function toGateTtfbMs(input: { ttfbMs: number | null; latencyMs: number; slots: number | null; headerSlots: number }): number | null {
  const implied = input.slots === null || input.slots <= 0 ? null : (input.headerSlots * input.latencyMs) / input.slots;
  if (input.ttfbMs === null) return implied;
  return implied === null ? input.ttfbMs : Math.min(input.ttfbMs, implied);
}

/**
 * How much of the window's room a lane that asked for `asked` is granted: all of it, except that
 * past what it starts within the fill time (`fillSlots`: toFillSlots over one round) it takes only
 * the pending tasks the other lanes have no free slots for (`freeElsewhere`). A lane starts 6 calls
 * a time to headers, so the 30th of a grant of 36 waits five of them, while a lane beside it with
 * its gate free would start it at once. A warm-up's release of 1,000 calls of 3 s with headers at
 * 500 ms: the warm-up's lane, its first headers in, asked for 35 while 166 lanes of 6 waited with
 * nothing; it got them, and its last calls started 2.5 s after the rest (1.48× the pool's wall).
 */
export function toGrantedRoom(input: { asked: number; fillSlots: number; pending: number; freeElsewhere: number }): number {
  const pastOthers = Math.max(0, input.pending - Math.max(0, input.freeElsewhere));
  return Math.max(0, Math.min(input.asked, Math.max(input.fillSlots, pastOthers)));
}

/**
 * Lanes a swarm opens before any lane has timed a call. Until then the room assumes header-bound
 * lanes (LANE_SLOTS, 6 calls each), which is right for a slow first byte and 20x too many lanes for
 * early headers: a window of 1,000 would start 167 executors where 8 carry it. The first lanes time
 * their calls within one call's latency, and the room then sends what the timing calls for. Not
 * after a header-bound prior (the tenant's last lanes of the model carried 6–11): those lanes said
 * what these will carry, and with headers at the answer the first timing takes a whole call.
 */
export const FIRST_LANES_MAX = 32;

/**
 * Tickets to issue now: enough lanes that the slots of the open tickets cover the tasks the swarm
 * could run (`demand`, at most its window), counting an unpulled ticket as `slotsPerTicket`; never
 * more than MAX_TICKETS_PER_SWARM open, nor FIRST_LANES_MAX while `measured` is false (no lane has
 * timed a call, and no header-bound prior stands in for one).
 */
export function toTicketsToIssue(input: { demand: number; coveredSlots: number; openTickets: number; slotsPerTicket: number; measured?: boolean }): number {
  const missing = input.demand - input.coveredSlots;
  if (missing <= 0) return 0;
  const wanted = Math.ceil(missing / Math.max(1, input.slotsPerTicket));
  const most = input.measured === false ? FIRST_LANES_MAX : MAX_TICKETS_PER_SWARM;
  return Math.max(0, Math.min(wanted, most - input.openTickets));
}

/**
 * What an open lane counts for when the room sizes its tickets: the slots it reports, or the tasks
 * it runs (`running`, its last pull's; null: not known yet) when those are more. A lane whose
 * measured time to headers swells after it filled (a busy machine sees headers late) reports fewer
 * slots than it runs, and its tasks wait at its gate; a lane sent for the difference is granted
 * nothing while those tasks hold the window, and only adds pulls. On this 2-core machine, 10,000 ×
 * 200 ms at W = 1,000 with early headers opened up to 299 lanes where 8–24 carried the swarm, up to
 * 258 of them pulling for seconds with nothing granted (docs/benchmarks.md, "Lanes that get
 * nothing"). (A draining or retired lane reports what it runs and holds: its slots are that already.)
 */
export function toCoveredSlots(lane: { slots: number; running: number | null }): number {
  const slots = Math.max(0, Math.floor(lane.slots));
  return lane.running === null ? slots : Math.max(slots, Math.floor(lane.running));
}

/**
 * Pulls a second the room spreads over its open lanes. A Durable Object has a soft limit of about
 * 1,000 requests a second ("If a Durable Object ... receives more than about 1,000 requests per
 * second, it may return overloaded errors": developers.cloudflare.com/durable-objects/platform/limits/);
 * the pulls get 400 of them, leaving room for call notes and journals, status reads, live
 * listeners and the alarm.
 */
export const ROOM_PULLS_PER_S = 400;

/**
 * The longest the outcomes of a lane its header gate keeps small wait for company before its pull
 * (unless the room paces it slower): its standby tasks take the freed slots meanwhile, so the wait
 * costs no call in flight as long as they last. The lane asks for standby tasks to cover the wait it
 * will make (src/core/standby.ts, up to three times its slots). 1,000 × lognormal 300/1500, W = 100,
 * headers with the answer: 400 ms 0.29 of the swarm's DO requests a task, 1 s 0.19, both at 1.00× the
 * pool's wall, with 98–100 calls in flight between the ramp and the tail as the pool has
 * (docs/benchmarks.md, "Standby that covers the wait, and lanes that share the end"). Earlier trials of longer waits lost wall
 * time (1.05× at 700 ms, 1.11× at 1 s) because the standby target counted the short wait of a lane
 * with no standby in hand, so each lane ran dry before each pull.
 */
export const SMALL_LANE_COALESCE_MAX_MS = 1_000;

/**
 * The same wait for a lane whose calls are longer than that: up to one mean call, at most this.
 * Header-bound calls of several seconds (a reasoning model's slow first token: lognormal with a
 * 3 s median and a 10 s p95, W = 100) end one by one, a lane of 6 hears of one every second or so,
 * and with a 1 s bound nearly every outcome made a pull of its own: 0.8 SwarmRoom requests a task.
 * Lanes renew their leases when half of one is left (5 s of the default 10 s): the wait ends by
 * then whatever its bound (run-lane.ts).
 */
export const LONG_CALL_COALESCE_MAX_MS = 5_000;

/** The longest a small lane's outcomes wait for company, its calls' mean latency given (ms; null: not timed). */
export function smallLaneCoalesceMaxMs(meanLatencyMs: number | null): number {
  if (meanLatencyMs === null || !Number.isFinite(meanLatencyMs)) return SMALL_LANE_COALESCE_MAX_MS;
  return Math.max(SMALL_LANE_COALESCE_MAX_MS, Math.min(LONG_CALL_COALESCE_MAX_MS, Math.round(meanLatencyMs)));
}

/**
 * The same wait while the swarm hedges: the room's latency percentile counts a call it has not
 * heard the end of as still running, so outcomes held for a second raise the hedging delay (the
 * hedged run fell from 0.67× to 0.89× the pool at 1 s in an earlier trial).
 */
export const HEDGING_SMALL_LANE_COALESCE_MAX_MS = 400;

/**
 * How long a drained lane's outcomes wait for company: the room's view of a swarm's tail lags by
 * this much at most (status counts, the live view), while its last outcome, and a task to retry,
 * go at once. Lognormal calls (median 300 ms, p95 1.5 s) end one by one in a tail of seconds: at
 * 100 ms each lane sent a pull for every outcome or two there.
 */
export const TAIL_COALESCE_MS = 2_000;

/**
 * The same wait while the swarm hedges (backups remain): the room's latency percentile counts a
 * call it has not heard the end of as still running, so outcomes held for 2 s would raise the
 * delay and starve the tail of the backups it is for.
 */
export const HEDGING_TAIL_COALESCE_MS = 100;

/** The longest a wide lane's outcomes wait for company (10% of the mean call latency, up to this). */
export const BASE_COALESCE_MAX_MS = 100;

/** The least time between one lane's pulls so that `openLanes` lanes stay within ROOM_PULLS_PER_S together. */
export function toPullPaceMs(openLanes: number): number {
  return Math.ceil((Math.max(0, openLanes) * 1_000) / ROOM_PULLS_PER_S);
}

/**
 * Lanes (executors) a window of `window` tasks needs: W / slots a lane, where a lane carries
 * min(concurrency, headerSlots × latency / TTFB) calls: about W × TTFB / (6 × latency), at least 1
 * (one lane when headers come early enough for it alone), at most MAX_TICKETS_PER_SWARM. The room
 * reaches the same count one ticket at a time (toTicketsToIssue over the lanes' reported slots).
 */
export function toExecutorCount(input: { window: number; concurrency: number; headerSlots: number; timing: LaneTiming }): number {
  const slots = toLaneSlots(input.concurrency, input.headerSlots, input.timing);
  return Math.max(1, Math.min(MAX_TICKETS_PER_SWARM, Math.ceil(Math.max(1, input.window) / slots)));
}

/** A lane retires only when the others cover the demand and this share of it again (retireMargin). */
export const RETIRE_MARGIN = 0.5;

/**
 * The slots the other lanes must have beyond the swarm's demand before a lane retires
 * (isSurplusLane's `margin`): half the demand, a clear surplus (lanes' reported slots move with
 * their timing, as a busy machine swells the measured TTFB, and a lane retired near the edge is
 * sent again by the next ticket sizing: a churn of starts and pulls). But a lane the window spreads
 * thin, one that carried under half its slots, needs only what it runs to spare: the others take
 * that over, and such a lane kept on (6 of a window of 100 next to a lane carrying 94 with room
 * for 128) ran its standby tasks 6 at a time at the swarm's end (1,000 × 200 ms: 1.09× the pool
 * where one lane alone took 0.91×). What a lane carried is what it runs and what it reports ended
 * in this pull (`ended`): a header-bound lane's calls end together, so at a round's end it runs
 * none for a moment, and counted thin then, one of 167 lanes of 6 at W = 1,000 whose measured
 * timing gave them 7 slots was retired with a window of tasks waiting; the ten retired that way
 * ran their tasks in a third round (2,000 × 1 s, headers with the answer: 2.0–2.2× ideal in the
 * runs where it happened, 1.45–1.55× in the others).
 */
export function retireMargin(input: { demand: number; running: number; ended: number; slots: number }): number {
  const half = Math.ceil(Math.max(0, input.demand) * RETIRE_MARGIN);
  const carried = Math.max(0, input.running) + Math.max(0, input.ended);
  return 2 * carried <= input.slots ? Math.min(half, Math.max(0, input.running) + 1) : half;
}

/**
 * Whether a lane is surplus and should end: it has timed its own calls (so its slots are real), the
 * swarm still has tasks to hand out (a tail is left to the lanes that run it), the other open
 * lanes' slots cover what the swarm can run at once without it, with `margin` slots to spare
 * (a lane's slots move by one as its timing does: a lane retired at the edge would be sent again),
 * and it runs no more tasks than the least of the other lanes (`running`, `othersLeastRunning`;
 * null: not known): the lanes that carry the window stay, and the thin ones go. Retired first
 * because it pulled first, a lane running 88 of a window of 100 drained while two lanes running 6
 * each took a second to pull and take the window over (1,000 × 200 ms, W = 100, early headers).
 */
export function isSurplusLane(input: {
  measured: boolean;
  waiting: number;
  demand: number;
  coveredByOthers: number;
  margin: number;
  running?: number;
  othersLeastRunning?: number | null;
}): boolean {
  const carriesMore =
    input.running !== undefined && input.othersLeastRunning !== undefined && input.othersLeastRunning !== null && input.running > input.othersLeastRunning;
  return input.measured && input.waiting > 0 && input.demand > 0 && input.coveredByOthers >= input.demand + Math.max(0, input.margin) && !carriesMore;
}
