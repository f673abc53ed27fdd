import { describe, expect, it } from "vitest";
import { formatInFlightBySteps, formatRamp, inFlightBySteps, rampOf, type InFlightSample } from "./ramp-trace.ts";

const T0 = 1_000_000;
const samples = (counts: number[], stepMs = 10, from = T0 - 5): InFlightSample[] => counts.map((inFlight, i) => ({ at: from + i * stepMs, inFlight }));

describe("the ramp of a run, as the mock saw it", () => {
  it.each([
    [
      "from the first request to the first sample at the peak",
      samples([0, 40, 90, 100, 100, 60]),
      100,
      [
        [5, 40],
        [15, 90],
        [25, 100],
      ],
      25,
    ],
    [
      "a peak no sample saw runs to the limit",
      samples([0, 40, 90, 95, 80]),
      100,
      [
        [5, 40],
        [15, 90],
        [25, 95],
        [35, 80],
      ],
      null,
    ],
    [
      "samples before the first request are left out",
      samples([3, 3, 50, 100], 10, T0 - 15),
      100,
      [
        [5, 50],
        [15, 100],
      ],
      15,
    ],
  ])("%s", (_, input, peak, points, peakAtMs) => {
    const ramp = rampOf(input, T0, peak);
    expect(ramp.points).toEqual(points);
    expect(ramp.peakAtMs).toBe(peakAtMs);
  });

  it("stops at the limit", () => {
    expect(rampOf(samples([0, 1, 2, 3, 4, 5]), T0, 100, 3).points).toEqual([
      [5, 1],
      [15, 2],
      [25, 3],
    ]);
  });

  it("has no points when the mock saw no request", () => {
    expect(rampOf(samples([0, 0]), null, 0)).toEqual({ points: [], peak: 0, peakAtMs: null });
  });

  it.each([
    [
      {
        points: [
          [5, 40],
          [25, 100],
        ] as Array<[number, number]>,
        peak: 100,
        peakAtMs: 25,
      },
      "peak 100 at +25 ms (4.00 calls/ms on average to it): +5 ms 40, +25 ms 100",
    ],
    [{ points: [[5, 40]] as Array<[number, number]>, peak: 100, peakAtMs: null }, "no sample saw the peak of 100: +5 ms 40"],
  ])("formats %j", (ramp, text) => {
    expect(formatRamp(ramp)).toBe(text);
  });
});

describe("in flight by steps, as the mock saw it", () => {
  it.each<[string, InFlightSample[], number | null, number, Array<[number, number]>]>([
    [
      "each step's mean, from the first request",
      samples([0, 40, 60, 100, 90, 10]),
      T0,
      20,
      [
        [0, 50],
        [20, 95],
        [40, 10],
      ],
    ],
    ["samples before the first request are left out", samples([7, 7, 50, 100], 10, T0 - 15), T0, 100, [[0, 75]]],
    ["no request: nothing", samples([0, 0]), null, 500, []],
    ["a step of 0: nothing", samples([1, 2]), T0, 0, []],
  ])("%s", (_, input, first, stepMs, expected) => {
    expect(inFlightBySteps(input, first, stepMs)).toEqual(expected);
  });

  it("prints each step's mean in seconds, rounded", () => {
    expect(
      formatInFlightBySteps([
        [0, 49.6],
        [500, 81],
        [1_000, 96.2],
      ]),
    ).toBe("+0 s 50, +0.5 s 81, +1 s 96");
    expect(formatInFlightBySteps([])).toBe("no request");
  });
});
