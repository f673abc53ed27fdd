import { describe, expect, it } from "vitest";
import {
  LONG_CALL_COALESCE_MAX_MS,
  SMALL_LANE_COALESCE_MAX_MS,
  smallLaneCoalesceMaxMs,
  FIRST_LANES_MAX,
  isSurplusLane,
  retireMargin,
  MAX_TICKETS_PER_SWARM,
  toCoveredSlots,
  toExecutorCount,
  toFillSlots,
  toGateTtfbMs,
  toGrantedRoom,
  toGrowthWaitMs,
  toLaneSlots,
  toPullPaceMs,
  toTicketsToIssue,
  toUntimedLaneSlots,
} from "./lane-sizing.ts";

describe("lane slots", () => {
  it.each([
    ["no timing yet: the concurrency", 128, 6, { ttfbMs: null, latencyMs: null }, 128],
    ["no gate: the concurrency", 128, 0, { ttfbMs: 500, latencyMs: 1_000 }, 128],
    ["fast headers: the gate does not bind", 128, 6, { ttfbMs: 4, latencyMs: 200 }, 128],
    ["slow headers: 6 slots × 200 ms / 50 ms", 128, 6, { ttfbMs: 50, latencyMs: 200 }, 24],
    ["a streamed 10 s answer after 300 ms: 6 × 10,000 / 300", 1_000, 6, { ttfbMs: 300, latencyMs: 10_000 }, 200],
    ["headers are the whole call (not streamed): 6", 128, 6, { ttfbMs: 800, latencyMs: 800 }, 6],
    ["latency below ttfb counts as ttfb", 128, 6, { ttfbMs: 800, latencyMs: 100 }, 6],
    ["never below 1", 0, 6, { ttfbMs: 50, latencyMs: 200 }, 1],
    ["zero ttfb: the concurrency", 64, 6, { ttfbMs: 0, latencyMs: 200 }, 64],
  ])("%s", (_label, concurrency, slots, timing, expected) => {
    expect(toLaneSlots(concurrency, slots, timing)).toBe(expected);
  });
});

describe("slots of a lane that has not timed a call", () => {
  const lane = { concurrency: 128, headerSlots: 6 };
  it.each([
    ["no prior: what the room assumed", { ...lane, assumedSlots: 6, headersMs: null }, 6],
    ["no prior, headers seen: still what the room assumed (no latency to size on)", { ...lane, assumedSlots: 6, headersMs: 2 }, 6],
    ["no prior, nothing assumed (an old ticket): the concurrency", { ...lane, headersMs: null }, 128],
    ["no prior, headers after 10 ms, a call running 20 ms on: 6 × 20 / 10", { ...lane, assumedSlots: 6, headersMs: 10, runningForMs: 20 }, 12],
    ["no prior, headers after 10 ms, a call running 1 s on: the concurrency", { ...lane, assumedSlots: 6, headersMs: 10, runningForMs: 1_000 }, 128],
    ["no prior, headers after 500 ms, a call running 1.5 s: 6 × 1500 / 500", { ...lane, assumedSlots: 6, headersMs: 500, runningForMs: 1_500 }, 18],
    ["no prior, a call not yet past its headers' time: what the room assumed", { ...lane, assumedSlots: 4, headersMs: 10, runningForMs: 10 }, 4],
    ["no prior, running calls that show fewer than assumed: what the room assumed", { ...lane, assumedSlots: 40, headersMs: 10, runningForMs: 30 }, 40],
    ["no prior, no headers yet: a running call shows nothing", { ...lane, assumedSlots: 6, headersMs: null, runningForMs: 2_000 }, 6],
    [
      "prior 480 ms, headers at 100 ms, a call running 2.4 s: the concurrency",
      { ...lane, assumedSlots: 28, priorLatencyMs: 480, headersMs: 100, runningForMs: 2_400 },
      128,
    ],
    [
      "prior 480 ms, headers at 300 ms, a call running 1.2 s: 6 × 1200 / 300",
      { ...lane, assumedSlots: 9, priorLatencyMs: 480, headersMs: 300, runningForMs: 1_200 },
      24,
    ],
    ["no gate: what the room assumed, whatever runs", { concurrency: 128, headerSlots: 0, assumedSlots: 6, headersMs: 10, runningForMs: 1_000 }, 6],
    ["a prior of early headers, none seen yet: the gate's 6", { ...lane, assumedSlots: 128, priorLatencyMs: 480, headersMs: null }, 6],
    ["the prior holds (headers after 2 ms): 6 × 480 / 2, at most the concurrency", { ...lane, assumedSlots: 128, priorLatencyMs: 480, headersMs: 2 }, 128],
    ["headers after 100 ms: 6 × 480 / 100", { ...lane, assumedSlots: 128, priorLatencyMs: 480, headersMs: 100 }, 28],
    ["the prior no longer holds (headers with a 700 ms answer): 6", { ...lane, assumedSlots: 128, priorLatencyMs: 480, headersMs: 700 }, 6],
    ["a header-bound prior: 6 before and after", { ...lane, assumedSlots: 6, priorLatencyMs: 650, headersMs: null }, 6],
    ["headers at 0 ms count as 1 ms", { ...lane, assumedSlots: 128, priorLatencyMs: 10, headersMs: 0 }, 60],
    ["a prior without a gate: what the room assumed", { concurrency: 128, headerSlots: 0, assumedSlots: 40, priorLatencyMs: 480, headersMs: null }, 40],
    ["a batch's lane: its share of the invocation's slots", { ...lane, headerSlots: 3, assumedSlots: 128, priorLatencyMs: 480, headersMs: null }, 3],
  ])("%s", (_label, input, expected) => {
    expect(toUntimedLaneSlots(input)).toBe(expected);
  });
});

describe("how long until an untimed lane's running calls prove more slots", () => {
  it.each([
    ["12 slots at headers in 10 ms: calls 20 ms old", { target: 12, headerSlots: 6, headersMs: 10, runningForMs: 0 }, 20],
    ["less what the oldest has run", { target: 12, headerSlots: 6, headersMs: 10, runningForMs: 15 }, 5],
    ["already there: 0", { target: 12, headerSlots: 6, headersMs: 10, runningForMs: 40 }, 0],
    ["headers at 120 ms (a loaded start), 48 slots: 960 ms", { target: 48, headerSlots: 6, headersMs: 120, runningForMs: 0 }, 960],
    ["a batch's lane, 3 of the invocation's slots: twice as long", { target: 12, headerSlots: 3, headersMs: 10, runningForMs: 0 }, 40],
    ["headers at 0 ms count as 1 ms", { target: 12, headerSlots: 6, headersMs: 0, runningForMs: 0 }, 2],
    ["rounded up to the millisecond", { target: 13, headerSlots: 6, headersMs: 10, runningForMs: 0 }, 22],
    ["no time to headers yet: null", { target: 12, headerSlots: 6, headersMs: null, runningForMs: 0 }, null],
    ["no gate: null", { target: 12, headerSlots: 0, headersMs: 10, runningForMs: 0 }, null],
  ])("%s", (_label, input, expected) => {
    expect(toGrowthWaitMs(input)).toBe(expected);
  });
});

describe("slots a ticket counts for while the window fills", () => {
  // Headers at 500 ms of a 3 s call: a lane carries 6 × 3000 / 500 = 36 once full, and starts 6 a time to headers.
  const partWay = { slots: 36, headerSlots: 6, ttfbMs: 500, latencyMs: 3_000 };
  it.each([
    ["one window (a fan-out): within one time to headers, the gate's 6", { ...partWay, rounds: 1 }, 6],
    ["two windows: within a fifth of a call, 6 × 600 / 500", { ...partWay, rounds: 2 }, 7],
    ["five windows: within half a call, 6 × 1500 / 500", { ...partWay, rounds: 5 }, 18],
    ["ten windows: over a call, as the steady state", { ...partWay, rounds: 10 }, 36],
    ["more than ten windows: never above the steady state", { ...partWay, rounds: 40 }, 36],
    ["headers with the answer: 6 whatever the rounds", { slots: 6, headerSlots: 6, ttfbMs: 3_000, latencyMs: 3_000, rounds: 1 }, 6],
    ["early headers, one window: within FILL_MIN_MS, not a tenth of the call", { slots: 128, headerSlots: 6, ttfbMs: 20, latencyMs: 200, rounds: 1 }, 75],
    ["headers at 100 ms of 1.5 s, one window: within FILL_MIN_MS, 6 × 250 / 100", { slots: 90, headerSlots: 6, ttfbMs: 100, latencyMs: 1_500, rounds: 1 }, 15],
    ["early headers at the concurrency cap, ten windows: the steady state", { slots: 128, headerSlots: 6, ttfbMs: 2, latencyMs: 200, rounds: 10 }, 128],
    ["no rounds counts as one", { ...partWay, rounds: 0 }, 6],
    ["no gate: the steady state", { ...partWay, headerSlots: 0, rounds: 1 }, 36],
    ["no time to headers: the steady state", { ...partWay, ttfbMs: 0, rounds: 1 }, 36],
    ["steady slots below the gate's: the steady slots", { ...partWay, slots: 4, rounds: 1 }, 4],
  ])("%s", (_label, input, expected) => {
    expect(toFillSlots(input)).toBe(expected);
  });
});

describe("the time to headers a lane's gate is held for", () => {
  it.each([
    ["headers at 500 ms of 3 s, lanes of 36: as measured", { ttfbMs: 500, latencyMs: 3_000, slots: 36, headerSlots: 6 }, 500],
    ["a busy machine's late view (30 ms) where the lanes' 128 slots say at most 9.375", { ttfbMs: 30, latencyMs: 200, slots: 128, headerSlots: 6 }, 9.375],
    ["slots the concurrency capped say less than the measured 2 ms: 2", { ttfbMs: 2, latencyMs: 200, slots: 128, headerSlots: 6 }, 2],
    ["no measured mean (a prior recorded before it was kept): what the slots imply", { ttfbMs: null, latencyMs: 480, slots: 64, headerSlots: 6 }, 45],
    ["no slots known: as measured", { ttfbMs: 120, latencyMs: 480, slots: null, headerSlots: 6 }, 120],
    ["neither: unknown", { ttfbMs: null, latencyMs: 480, slots: null, headerSlots: 6 }, null],
  ])("%s", (_label, input, expected) => {
    expect(toGateTtfbMs(input)).toBe(expected);
  });
});

describe("the window's room a lane is granted", () => {
  it.each([
    ["within what its gate starts at once: all it asked", { asked: 6, fillSlots: 6, pending: 994, freeElsewhere: 996 }, 6],
    ["a release: 166 lanes of 6 wait with nothing, so the gate's 6 of 35", { asked: 35, fillSlots: 6, pending: 999, freeElsewhere: 996 }, 6],
    ["the others have slots for part: the gate's 6 and what they cannot take", { asked: 35, fillSlots: 6, pending: 999, freeElsewhere: 979 }, 20],
    ["the others are full: all it asked", { asked: 35, fillSlots: 6, pending: 5_000, freeElsewhere: 0 }, 35],
    ["early headers (it starts all it asks within the fill time): all", { asked: 122, fillSlots: 122, pending: 900, freeElsewhere: 896 }, 122],
    ["never more than it asked", { asked: 4, fillSlots: 6, pending: 100, freeElsewhere: 0 }, 4],
    ["nothing asked: nothing", { asked: 0, fillSlots: 6, pending: 100, freeElsewhere: 0 }, 0],
    ["free slots counted below zero count as none", { asked: 10, fillSlots: 6, pending: 8, freeElsewhere: -3 }, 8],
  ])("%s", (_label, input, expected) => {
    expect(toGrantedRoom(input)).toBe(expected);
  });
});

describe("tickets to issue", () => {
  it.each([
    ["a new window of 100 at 128 slots a ticket", { demand: 100, coveredSlots: 0, openTickets: 0, slotsPerTicket: 128 }, 1],
    ["a window of 1,000 at 128 a ticket", { demand: 1_000, coveredSlots: 0, openTickets: 0, slotsPerTicket: 128 }, 8],
    ["covered: none", { demand: 100, coveredSlots: 128, openTickets: 1, slotsPerTicket: 128 }, 0],
    ["lanes smaller than assumed: one more", { demand: 100, coveredSlots: 60, openTickets: 1, slotsPerTicket: 60 }, 1],
    ["nothing left to run: none", { demand: 0, coveredSlots: 0, openTickets: 0, slotsPerTicket: 128 }, 0],
    ["at most the queue's consumer concurrency", { demand: 10_000, coveredSlots: 0, openTickets: 0, slotsPerTicket: 1 }, MAX_TICKETS_PER_SWARM],
    ["counting the open ones", { demand: 10_000, coveredSlots: 240, openTickets: 240, slotsPerTicket: 1 }, MAX_TICKETS_PER_SWARM - 240],
    ["a zero slot guess counts as 1", { demand: 3, coveredSlots: 0, openTickets: 0, slotsPerTicket: 0 }, 3],
    ["a window of 100, header-bound until measured: 17 lanes", { demand: 100, coveredSlots: 0, openTickets: 0, slotsPerTicket: 6, measured: false }, 17],
    [
      "a window of 1,000 before any lane has timed a call: the first 32 only",
      { demand: 1_000, coveredSlots: 0, openTickets: 0, slotsPerTicket: 6, measured: false },
      FIRST_LANES_MAX,
    ],
    [
      "once a lane has timed its calls: what the timing calls for",
      { demand: 1_000, coveredSlots: 192, openTickets: 32, slotsPerTicket: 6, measured: true },
      135,
    ],
  ])("%s", (_label, input, expected) => {
    expect(toTicketsToIssue(input)).toBe(expected);
  });
});

describe("slots an open lane covers", () => {
  it.each([
    ["not pulled yet (running unknown): its slots", { slots: 6, running: null }, 6],
    ["runs within its slots: its slots", { slots: 128, running: 90 }, 128],
    ["a header-bound lane that runs its 6: 6", { slots: 6, running: 6 }, 6],
    ["runs more than its swollen timing reports (tasks wait at its gate): what it runs", { slots: 19, running: 90 }, 90],
    ["runs nothing: its slots", { slots: 24, running: 0 }, 24],
    ["fractions count whole", { slots: 6.9, running: 7.5 }, 7],
    ["never negative", { slots: -1, running: null }, 0],
  ])("%s", (_label, lane, expected) => {
    expect(toCoveredSlots(lane)).toBe(expected);
  });
});

describe("executor count", () => {
  const headersWithTheAnswer = { ttfbMs: 200, latencyMs: 200 };
  const earlyHeaders = { ttfbMs: 5, latencyMs: 200 };
  const unmeasured = { ttfbMs: null, latencyMs: null };
  it.each([
    ["headers with the answer: 100 tasks over 6 a lane", 100, 128, headersWithTheAnswer, 17],
    ["headers with the answer: 1,000 tasks over 6 a lane", 1_000, 128, headersWithTheAnswer, 167],
    ["headers with the answer: 1,500 tasks, capped at the queue's consumers", 1_500, 128, headersWithTheAnswer, MAX_TICKETS_PER_SWARM],
    ["early headers: one lane carries its concurrency", 100, 128, earlyHeaders, 1],
    ["early headers: 1,000 tasks over 128 a lane", 1_000, 128, earlyHeaders, 8],
    ["no timing yet: the window over the concurrency", 1_000, 128, unmeasured, 8],
    ["no timing yet: a window below the concurrency", 100, 128, unmeasured, 1],
    ["an empty window: still one lane", 0, 128, headersWithTheAnswer, 1],
  ])("%s", (_label, window, concurrency, timing, expected) => {
    expect(toExecutorCount({ window, concurrency, headerSlots: 6, timing })).toBe(expected);
  });
});

describe("pull pace", () => {
  it.each([
    ["no lanes: no wait", 0, 0],
    ["one lane: 1,000 / 400 ms, rounded up", 1, 3],
    ["17 lanes", 17, 43],
    ["the most lanes a swarm has", MAX_TICKETS_PER_SWARM, 625],
    ["a negative count is none", -3, 0],
  ])("%s", (_label, lanes, expected) => {
    expect(toPullPaceMs(lanes)).toBe(expected);
  });

  it("keeps the open lanes' pulls within ROOM_PULLS_PER_S together", () => {
    for (const lanes of [1, 17, 100, MAX_TICKETS_PER_SWARM]) expect((lanes * 1_000) / toPullPaceMs(lanes)).toBeLessThanOrEqual(400);
  });
});

describe("what the other lanes must cover beyond the demand before a lane retires", () => {
  it.each([
    ["a lane carrying most of its slots: half the demand", { demand: 100, running: 94, ended: 0, slots: 128 }, 50],
    ["a thin lane (6 of 128): what it runs, and one", { demand: 100, running: 6, ended: 0, slots: 128 }, 7],
    ["a thin lane that also reports 3 ended: still thin", { demand: 100, running: 6, ended: 3, slots: 128 }, 7],
    ["a header-bound lane, 6 running of 8: half the demand", { demand: 100, running: 6, ended: 0, slots: 8 }, 50],
    ["a header-bound lane whose 6 calls all just ended (running 0, 6 reported): half the demand", { demand: 1_000, running: 0, ended: 6, slots: 7 }, 500],
    ["a lane that ran nothing and reports nothing: one", { demand: 1_000, running: 0, ended: 0, slots: 7 }, 1],
    ["a small demand bounds the thin lane's margin", { demand: 1, running: 6, ended: 0, slots: 128 }, 1],
    ["no demand: none", { demand: 0, running: 94, ended: 0, slots: 128 }, 0],
  ])("%s", (_label, input, expected) => {
    expect(retireMargin(input)).toBe(expected);
  });
});

describe("surplus lane", () => {
  const busy = { measured: true, waiting: 50, demand: 60, coveredByOthers: 100, margin: 6 };
  it.each([
    ["covered with a lane to spare: surplus", busy, true],
    ["covered exactly at demand + margin: surplus", { ...busy, coveredByOthers: 66 }, true],
    ["unmeasured (its slots are a guess): never", { ...busy, measured: false }, false],
    ["nothing waiting (the tail is its to run): never", { ...busy, waiting: 0 }, false],
    ["no demand: never", { ...busy, demand: 0 }, false],
    ["others cover the demand but no margin (6): kept", { ...busy, coveredByOthers: 60 }, false],
    ["others short of demand + margin by one: kept", { ...busy, coveredByOthers: 65 }, false],
    ["a negative margin counts as 0", { ...busy, coveredByOthers: 60, margin: -5 }, true],
    ["it carries the window (88) while another lane runs 6: kept", { ...busy, running: 88, othersLeastRunning: 6 }, false],
    ["it runs 6 and another lane 88: surplus", { ...busy, running: 6, othersLeastRunning: 88 }, true],
    ["it runs as few as the least of the others: surplus", { ...busy, running: 6, othersLeastRunning: 6 }, true],
    ["the others' running not known: by slots alone", { ...busy, running: 88, othersLeastRunning: null }, true],
  ])("%s", (_label, input, expected) => {
    expect(isSurplusLane(input)).toBe(expected);
  });
});

describe("the longest a small lane's outcomes wait for company", () => {
  it.each<[string, number | null, number]>([
    ["no call timed: SMALL_LANE_COALESCE_MAX_MS", null, SMALL_LANE_COALESCE_MAX_MS],
    ["calls shorter than that: SMALL_LANE_COALESCE_MAX_MS", 666, SMALL_LANE_COALESCE_MAX_MS],
    ["3 s calls: one call", 3_000, 3_000],
    ["20 s calls: LONG_CALL_COALESCE_MAX_MS", 20_000, LONG_CALL_COALESCE_MAX_MS],
    ["a latency that is not a number: SMALL_LANE_COALESCE_MAX_MS", Number.NaN, SMALL_LANE_COALESCE_MAX_MS],
  ])("%s", (_label, latencyMs, expected) => {
    expect(smallLaneCoalesceMaxMs(latencyMs)).toBe(expected);
  });
});
