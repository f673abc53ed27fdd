// What one lane carries and when it says so (lane-sizer.ts), on a clock and timers in the test's
// hands: the room's assumption until a call is timed, a first swarm's slow first headers told once,
// growth by doubling while calls run past early headers, and none while the window grants less.
import { describe, expect, it } from "vitest";
import { FILL_MIN_MS } from "../../../src/core/lane-sizing.ts";
import { createLaneSizer, type LaneSizerDeps } from "../lane-sizer.ts";

/** A sizer of one lane with a gate of 6, a clock and timers the test advances, and its pokes counted. */
function sized(options: Partial<LaneSizerDeps> = {}) {
  let t = 1_000_000;
  let nextId = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const state = { pokes: 0, running: 0, gateWaiting: 0, taking: true };
  const sizer = createLaneSizer({
    concurrency: 1_000,
    headerSlots: 6,
    lanes: 1,
    assumedSlots: 6,
    now: () => t,
    gateWaiting: () => state.gateWaiting,
    running: () => state.running,
    poke: () => {
      state.pokes += 1;
    },
    taking: () => state.taking,
    setTimer: (fn, ms) => {
      nextId += 1;
      timers.set(nextId, { at: t + ms, fn });
      return nextId;
    },
    clearTimer: (id) => {
      timers.delete(id as number);
    },
    ...options,
  });
  /** Moves the clock on, firing each timer that comes due, in order. */
  const advance = (ms: number): void => {
    const until = t + ms;
    for (;;) {
      const due = [...timers.entries()].filter(([, timer]) => timer.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (due === undefined) break;
      timers.delete(due[0]);
      t = Math.max(t, due[1].at);
      due[1].fn();
    }
    t = until;
  };
  return { sizer, state, advance, timers: () => timers.size };
}

/** Six of its tasks run, the first call's headers came `headersMs` after it was sent, and a pull that told 6 was answered. */
function runningSix(lane: ReturnType<typeof sized>, answer: { grantedShort: boolean; headersMs?: number; toldFirstHeaders?: boolean }): void {
  lane.state.running = 6;
  lane.sizer.callHeaders("t1", answer.headersMs ?? 10);
  lane.sizer.told(6);
  lane.sizer.answered({ grantedShort: answer.grantedShort, toldFirstHeaders: answer.toldFirstHeaders ?? false });
}

describe("a lane's size", () => {
  it("is what the room assumed until a call is timed, then the gate's share at the calls' timing", () => {
    const { sizer } = sized();
    expect(sizer.capacity()).toBe(6);
    expect(sizer.reportedSlots()).toBe(6);
    expect(sizer.timing()).toEqual({ ttfbMs: null, latencyMs: null });
    // Headers at 20 ms, answers at 200 ms: each of the 6 slots carries 10 calls.
    sizer.timed(20, 200);
    expect(sizer.capacity()).toBe(60);
    expect(sizer.reportedSlots()).toBe(60);
    // A call without a time to headers (it failed before them) says nothing of the timing.
    sizer.timed(null, 5_000);
    expect(sizer.timing()).toEqual({ ttfbMs: 20, latencyMs: 200 });
  });

  it("takes the event loop's lateness off the time to headers it sizes on", () => {
    const { sizer } = sized();
    sizer.timerLate(10);
    // 20 ms measured, 10 of them the loop's: each slot carries 200 / 10 calls.
    sizer.timed(20, 200);
    expect(sizer.capacity()).toBe(120);
  });

  it("on a prior, sizes on its first headers at once: early headers confirm the prior's lanes", () => {
    const { sizer } = sized({ priorLatencyMs: 3_000, assumedSlots: 200 });
    // Before any headers a lane on a prior runs on its gate's 6, and tells the room the 200 assumed.
    expect(sizer.capacity()).toBe(6);
    expect(sizer.reportedSlots()).toBe(200);
    sizer.callHeaders("t1", 30);
    expect(sizer.capacity()).toBe(600);
  });
});

describe("a first swarm's first headers", () => {
  it("slower than FILL_MIN_MS are told with the next pull, once, and wake the pull loop", () => {
    const { sizer, state } = sized();
    state.running = 6;
    sizer.callSent();
    sizer.callHeaders("t1", FILL_MIN_MS + 50);
    expect(state.pokes).toBe(1);
    expect(sizer.untoldFirstHeaders()).toEqual({ firstHeadersMs: FILL_MIN_MS + 50 });
    sizer.answered({ grantedShort: false, toldFirstHeaders: true });
    expect(sizer.untoldFirstHeaders()).toEqual({});
  });

  it("that have not come FILL_MIN_MS after the first call was sent are told then", () => {
    const { sizer, state, advance } = sized();
    sizer.callSent();
    advance(FILL_MIN_MS - 1);
    expect(sizer.untoldFirstHeaders()).toEqual({});
    advance(1);
    expect(sizer.untoldFirstHeaders()).toEqual({ firstHeadersMs: FILL_MIN_MS });
    expect(state.pokes).toBe(1);
  });

  it("that come early are not news", () => {
    const { sizer, advance } = sized();
    sizer.callSent();
    sizer.callHeaders("t1", 20);
    advance(FILL_MIN_MS * 4);
    expect(sizer.untoldFirstHeaders()).toEqual({});
  });
});

describe("growth before a call is timed", () => {
  it("wakes the pull loop each time the oldest call's age shows twice what the lane runs and told", () => {
    const lane = sized();
    const { sizer, state, advance } = lane;
    lane.sizer.callSent();
    runningSix(lane, { grantedShort: false });
    // 12 slots need a call 12 × 10 / 6 = 20 ms old: t1 was sent 10 ms before its headers.
    advance(9);
    expect(state.pokes).toBe(0);
    advance(1);
    expect(state.pokes).toBe(1);
    expect(sizer.capacity()).toBe(12);
    // The pull it brought told 12 and ran 12: the next wake is at 24 slots, a 40 ms old call.
    state.running = 12;
    sizer.told(12);
    sizer.answered({ grantedShort: false, toldFirstHeaders: false });
    advance(19);
    expect(state.pokes).toBe(1);
    advance(1);
    expect(state.pokes).toBe(2);
    expect(sizer.capacity()).toBe(24);
  });

  it("stops while the window grants it less than it asked, while calls queue at the gate, and once the lane ends", () => {
    const short = sized();
    runningSix(short, { grantedShort: true });
    short.advance(1_000);
    expect(short.state.pokes).toBe(0);
    expect(short.timers()).toBe(0);

    // Granted what it asked, but its calls wait at the gate: it looks again a time to headers on (50 ms at least).
    const queued = sized();
    queued.state.gateWaiting = 3;
    runningSix(queued, { grantedShort: false });
    queued.advance(10);
    expect(queued.state.pokes).toBe(0);
    queued.state.gateWaiting = 0;
    queued.advance(50);
    expect(queued.state.pokes).toBe(1);

    const ended = sized();
    runningSix(ended, { grantedShort: false });
    expect(ended.timers()).toBe(1);
    ended.sizer.close();
    expect(ended.timers()).toBe(0);
    ended.advance(1_000);
    expect(ended.state.pokes).toBe(0);
  });

  it("none after a timed call, nor after the lane told the room its first headers were slow", () => {
    const timed = sized();
    timed.sizer.timed(10, 3_000);
    runningSix(timed, { grantedShort: false });
    expect(timed.timers()).toBe(0);

    const slow = sized();
    slow.sizer.callSent();
    runningSix(slow, { grantedShort: false, headersMs: FILL_MIN_MS + 50, toldFirstHeaders: true });
    slow.advance(10_000);
    // The one poke is the slow headers' news; no growth follows it.
    expect(slow.state.pokes).toBe(1);
  });
});
