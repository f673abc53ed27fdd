import { describe, expect, it } from "vitest";
import { PRICES, toCapacity } from "../../src/core/capacity-model.ts";
import { type CanaryRun, type CanarySample, toCanaryFigures, toModelInput, toPeakMean, toRamp, toSecondRows } from "./canary-figures.ts";

/** Samples from [atMs, inFlight] pairs; the other fields as a caller sets them. */
const samplesOf = (points: ReadonlyArray<readonly [number, number]>, extra: Partial<CanarySample> = {}): CanarySample[] =>
  points.map(([atMs, inFlight]) => ({ atMs, inFlight, done: 0, lanes: null, slots: null, doRequests: null, ttfbMs: null, latencyMs: null, ...extra }));

const runOf = (overrides: Partial<CanaryRun>): CanaryRun => ({
  tasks: 100,
  window: 20,
  agentConcurrency: 128,
  samples: [],
  statusReads: 0,
  succeeded: 100,
  failed: 0,
  latencyP50Ms: null,
  latencyP95Ms: null,
  billable: null,
  ...overrides,
});

describe("toRamp", () => {
  it.each([
    // label, samples [atMs, inFlight], window → first, half, 90%, calls a second to 90% (or the peak)
    [
      "a steady ramp",
      [
        [100, 0],
        [200, 5],
        [300, 10],
        [400, 18],
        [500, 20],
      ],
      20,
      200,
      300,
      400,
      45,
    ],
    [
      "full at the first read",
      [
        [300, 20],
        [800, 20],
      ],
      20,
      300,
      300,
      300,
      (20 * 1_000) / 300,
    ],
    [
      "never at 90%: the rate to the peak",
      [
        [100, 0],
        [200, 4],
        [300, 8],
        [400, 6],
      ],
      20,
      200,
      null,
      null,
      (8 * 1_000) / 300,
    ],
    [
      "half but not 90%",
      [
        [250, 10],
        [500, 12],
      ],
      20,
      250,
      250,
      null,
      (12 * 1_000) / 500,
    ],
    [
      "nothing ever in flight",
      [
        [100, 0],
        [200, 0],
      ],
      20,
      null,
      null,
      null,
      null,
    ],
    ["no samples", [], 20, null, null, null, null],
  ] as const)("%s", (_label, points, window, first, half, ninety, rate) => {
    const ramp = toRamp(samplesOf(points), window);
    expect(ramp.firstInFlightMs).toBe(first);
    expect(ramp.halfWindowMs).toBe(half);
    expect(ramp.ninetyWindowMs).toBe(ninety);
    if (rate === null) expect(ramp.callsPerS).toBeNull();
    else expect(ramp.callsPerS).toBeCloseTo(rate, 6);
  });
});

describe("toPeakMean", () => {
  it.each([
    // each value holds until the next sample; the span runs from the first to the last sample in flight
    [
      "time-weighted over the active span",
      [
        [0, 0],
        [100, 10],
        [200, 20],
        [400, 20],
        [500, 0],
      ],
      20,
      (10 * 100 + 20 * 200) / 300,
    ],
    [
      "one sample in flight",
      [
        [0, 0],
        [300, 7],
        [800, 0],
      ],
      7,
      7,
    ],
    [
      "nothing in flight",
      [
        [0, 0],
        [500, 0],
      ],
      0,
      0,
    ],
  ] as const)("%s", (_label, points, peak, mean) => {
    const figures = toPeakMean(samplesOf(points), (s) => s.inFlight);
    expect(figures?.peak).toBe(peak);
    expect(figures?.mean).toBeCloseTo(mean, 6);
  });

  it("is null for a figure no sample has (a stack without the dispatch view)", () => {
    expect(toPeakMean(samplesOf([[100, 3]]), (s) => s.lanes)).toBeNull();
  });
});

describe("toSecondRows", () => {
  it("keeps the last read of each second and takes the canary's own reads off the SwarmRoom's requests", () => {
    const samples = samplesOf([
      [300, 4],
      [700, 9],
      [1_200, 8],
      [2_100, 0],
    ]).map((s, i) => ({ ...s, doRequests: [5, 12, 30, 40][i] ?? null, lanes: [1, 3, 2, 0][i] ?? null, done: [0, 0, 6, 20][i] ?? 0 }));
    expect(toSecondRows(samples)).toEqual([
      // since submit: 12 requests, 2 of them the reads at 300 and 700 ms, over 0.7 s
      { atS: 1, inFlight: 9, lanes: 3, done: 0, roomRequestsPerS: (10 * 1_000) / 700 },
      { atS: 2, inFlight: 8, lanes: 2, done: 6, roomRequestsPerS: (17 * 1_000) / 500 },
      { atS: 3, inFlight: 0, lanes: 0, done: 20, roomRequestsPerS: (9 * 1_000) / 900 },
    ]);
  });

  it("has no request rates without billable operations", () => {
    expect(toSecondRows(samplesOf([[400, 2]])).map((r) => r.roomRequestsPerS)).toEqual([null]);
  });
});

describe("toModelInput", () => {
  it.each([
    ["the lanes' means", [40, 60], [200, 300], 150, { ttfbMs: 50, latencyMs: 250 }],
    ["no dispatch view: the status p50, headers with the answer", [null], [null], 180, { ttfbMs: 180, latencyMs: 180 }],
    ["nothing timed", [null], [null], null, null],
  ] as const)("%s", (_label, ttfbs, latencies, p50, expected) => {
    const samples = ttfbs.map((ttfbMs, i) => ({ ...samplesOf([[100 * (i + 1), 5]])[0], ttfbMs, latencyMs: latencies[i] ?? null }) as CanarySample);
    const input = toModelInput(runOf({ tasks: 10, window: 20, samples, latencyP50Ms: p50 }));
    if (expected === null) expect(input).toBeNull();
    // the window is at most the swarm's tasks
    else expect(input).toEqual({ window: 10, concurrency: 128, tasks: 10, ...expected });
  });
});

describe("toCanaryFigures", () => {
  const samples = samplesOf([
    [200, 10],
    [400, 20],
    [1_400, 20],
    [2_400, 0],
  ]).map((s, i) => ({ ...s, ttfbMs: 50, latencyMs: 250, lanes: 2, slots: 24, doRequests: [3, 10, 200, 480][i] ?? null, done: [0, 0, 40, 100][i] ?? 0 }));
  const run = runOf({
    samples,
    statusReads: 20,
    latencyP50Ms: 240,
    latencyP95Ms: 400,
    billable: { queueMessagesSent: 10, doRequests: 500, doRowsWritten: 3_000, d1RowsWritten: 700 },
  });

  it("prices the measured operations and rows written per 1,000 tasks with PRICES, the canary's reads left out, and the model's duration", () => {
    const f = toCanaryFigures(run);
    const capacity = toCapacity({ window: 20, ttfbMs: 50, latencyMs: 250, concurrency: 128, tasks: 100 });
    expect(f.per1kTasks).toEqual({ doRequests: 4_800, statusReadsLeftOut: 20, queueMessages: 100, doRowsWritten: 30_000, d1RowsWritten: 7_000 });
    expect(f.costPer1kTasks?.doRequestsUsd).toBeCloseTo(4_800 * PRICES.doRequestUsd, 12);
    expect(f.costPer1kTasks?.queueUsd).toBeCloseTo(100 * 3 * PRICES.queueOperationUsd, 12);
    expect(f.costPer1kTasks?.rowsUsd).toBeCloseTo((30_000 + 7_000) * PRICES.rowWrittenUsd, 12);
    expect(f.costPer1kTasks?.durationUsdModel).toBeCloseTo(capacity.executorGbSecondsPer1kTasks * PRICES.doGbSecondUsd, 12);
    expect(f.costPer1kTasks?.totalUsd).toBeCloseTo(
      4_800 * PRICES.doRequestUsd +
        37_000 * PRICES.rowWrittenUsd +
        100 * 3 * PRICES.queueOperationUsd +
        capacity.executorGbSecondsPer1kTasks * PRICES.doGbSecondUsd,
      12,
    );
    expect(f.model?.capacity).toEqual(capacity);
  });

  it("measures the ramp, peaks and rates from the samples", () => {
    const f = toCanaryFigures(run);
    expect(f.ramp).toMatchObject({ firstInFlightMs: 200, halfWindowMs: 200, ninetyWindowMs: 400 });
    expect(f.inFlight.peak).toBe(20);
    expect(f.lanes).toEqual({ peak: 2, mean: 2 });
    expect(f.slotsPeak).toBe(24);
    // 100 tasks from the first call in flight (200 ms) to the read that saw them all (2,400 ms)
    expect(f.tasksPerS).toBeCloseTo(100 / 2.2, 6);
    // 480 requests, 4 of them the canary's reads, over 2.4 s since submit
    expect(f.roomRequestsPerS?.mean).toBeCloseTo(476 / 2.4, 6);
    expect(f.timing).toEqual({ ttfbMs: 50, latencyMs: 250, p50Ms: 240, p95Ms: 400 });
  });

  it("has no cost without billable operations, and no model before a call was timed", () => {
    const f = toCanaryFigures(runOf({ samples: samplesOf([[300, 0]]) }));
    expect(f.per1kTasks).toBeNull();
    expect(f.costPer1kTasks).toBeNull();
    expect(f.model).toBeNull();
    expect(f.roomRequestsPerS).toBeNull();
  });
});
