import { describe, expect, it } from "vitest";
import { formatSlotRefill, slotRefill } from "./slot-refill.ts";
import type { RequestSpan } from "../../dev/mock-model/server.ts";

const T0 = 1_700_000_000_000;
/** Back-to-back calls of `ms` in each slot: slot i starts at offsets[i] and waits gaps[i][k] before its k-th call after the first. */
function slots(ms: number, offsets: number[], rounds: number, gaps: number[][] = []): RequestSpan[] {
  const spans: RequestSpan[] = [];
  for (const [slot, offset] of offsets.entries()) {
    let at = T0 + offset;
    for (let k = 0; k < rounds; k += 1) {
      at += k === 0 ? 0 : (gaps[slot]?.[k - 1] ?? 0);
      spans.push({ start: at, end: at + ms });
      at += ms;
    }
  }
  return spans;
}

/** Two slots of three 200 ms calls, the second starting 10 ms later; they wait 10 and 0 ms, and 30 and 60 ms, before their next calls. */
const waitingSlots = slots(200, [0, 10], 3, [
  [10, 0],
  [30, 60],
]);

describe("freed slots refilled, round by round", () => {
  it.each([
    [
      "a pool that refills at once: nothing lost, the last round starts and ends together",
      slots(200, [0, 0, 0], 3),
      3,
      {
        rampMs: 0,
        rounds: [
          { round: 2, n: 3, meanMs: 0, p90Ms: 0 },
          { round: 3, n: 3, meanMs: 0, p90Ms: 0 },
        ],
        lostMs: 0,
        lastStartsMs: 0,
        lastEndsMs: 0,
      },
    ],
    [
      "slots that wait for their next task: each wait is its round's, and their sum over W is the wall lost",
      waitingSlots,
      2,
      {
        rampMs: 10,
        rounds: [
          { round: 2, n: 2, meanMs: 20, p90Ms: 30 },
          { round: 3, n: 2, meanMs: 30, p90Ms: 60 },
        ],
        lostMs: 50,
        // The last calls start at +410 and +500.
        lastStartsMs: 90,
        lastEndsMs: 90,
      },
    ],
    [
      "a start no freed slot precedes (a runner over its window) is left out",
      [
        { start: T0, end: T0 + 100 },
        { start: T0 + 10, end: T0 + 50 },
        { start: T0 + 50, end: T0 + 150 },
        { start: T0 + 100, end: T0 + 200 },
      ],
      1,
      {
        rampMs: 0,
        // The start at +10 (round 2) finds no slot freed yet; +50 takes the one freed at +50, +100 the one at +100.
        rounds: [
          { round: 3, n: 1, meanMs: 0, p90Ms: 0 },
          { round: 4, n: 1, meanMs: 0, p90Ms: 0 },
        ],
        lostMs: 0,
        lastStartsMs: 0,
        lastEndsMs: 0,
      },
    ],
  ])("%s", (_label, spans, window, expected) => {
    expect(slotRefill(spans, window)).toEqual({ window, ...expected });
  });

  it.each([
    ["fewer than two windows of requests", slots(200, [0, 0, 0], 1), 2],
    ["no window", slots(200, [0], 4), 0],
  ])("has no figures with %s", (_label, spans, window) => {
    expect(slotRefill(spans, window)).toBeNull();
  });
});

describe("the refill line", () => {
  it("names the ramp, each round, the wall lost and the last round's spread", () => {
    const line = formatSlotRefill(slotRefill(waitingSlots, 2));
    expect(line).toBe(
      "request 2 10 ms after the first; freed slots refilled (ms, mean/p90): r2 20/30, r3 30/60; 50 ms of a full window in all; the last 2 started over 90 ms, ended over 90 ms",
    );
  });

  it("sums up the middle rounds of a long run", () => {
    const line = formatSlotRefill(slotRefill(slots(100, [0, 0], 20, [Array.from({ length: 19 }, () => 5), Array.from({ length: 19 }, () => 5)]), 2));
    expect(line).toContain("r2 5/5, r3 5/5, r4 5/5, r5 5/5, r6–r16 5 mean, r17 5/5, r18 5/5, r19 5/5, r20 5/5;");
  });

  it("says why there are no figures", () => {
    expect(formatSlotRefill(null)).toBe("n/a (fewer than two windows of requests)");
  });
});
