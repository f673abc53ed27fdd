import { describe, expect, it } from "vitest";
import {
  bootstrap,
  compareTracedRounds,
  compareTracedRuns,
  formatTraceComparison,
  formatTracedSwarm,
  pairNeighbours,
  parseTracedRounds,
  randomizationInterval,
  type TracedRound,
} from "./trace-comparison.ts";
import { createPrng } from "../../dev/mock-model/prng.ts";

const on = (cpuPerTask: number): TracedRound => ({ traced: true, cpuPerTask });
const off = (cpuPerTask: number): TracedRound => ({ traced: false, cpuPerTask });

describe("pairing swarms that ran next to each other", () => {
  it.each([
    [
      "alternating",
      [on(1), off(2), on(3), off(4)],
      [
        [1, 2],
        [3, 4],
      ],
    ],
    [
      "untraced first",
      [off(2), on(1), off(4), on(3)],
      [
        [1, 2],
        [3, 4],
      ],
    ],
    [
      "runs of each side pair from the middle out, as brackets do",
      [on(1), on(3), off(2), off(4)],
      [
        [3, 2],
        [1, 4],
      ],
    ],
    [
      "a swarm pairs with the latest waiting one, not an older one",
      [on(1), on(3), off(2), on(5), off(4), off(6)],
      [
        [3, 2],
        [5, 4],
        [1, 6],
      ],
    ],
    ["an odd one out stays unpaired", [on(1), off(2), on(3)], [[1, 2]]],
    ["one side only: no pair", [on(1), on(3)], []],
  ])("%s", (_, rounds, expected) => {
    expect(pairNeighbours(rounds).map(([a, b]) => [a.cpuPerTask, b.cpuPerTask])).toEqual(expected);
  });
});

describe("a bootstrap interval", () => {
  const ratioOfMedians = ([on, off]: number[][]) => median(on ?? []) / median(off ?? []);

  it("is one point when nothing varies", () => {
    expect(
      bootstrap(
        { target: 1.05 },
        [
          [2.1, 2.1, 2.1],
          [2, 2, 2],
        ],
        ratioOfMedians,
      ),
    ).toEqual({ low: 1.05, high: 1.05, level: 0.9 });
  });

  it("holds the figure and widens with the spread", () => {
    const tight = bootstrap(
      { target: 1.05 },
      [
        [2.0, 2.02, 2.04, 2.01],
        [2.0, 1.98, 2.01, 1.99],
      ],
      ratioOfMedians,
    );
    const loose = bootstrap(
      { target: 1.05 },
      [
        [1.6, 2.02, 2.5, 2.01],
        [2.4, 1.98, 1.6, 1.99],
      ],
      ratioOfMedians,
    );
    for (const interval of [tight, loose]) {
      expect(interval.low).toBeLessThanOrEqual(1.0125);
      expect(interval.high).toBeGreaterThanOrEqual(1.0125);
    }
    expect(loose.high - loose.low).toBeGreaterThan(tight.high - tight.low);
  });

  it("is the same for the same figures and seed", () => {
    const samples = [
      [2.3, 2.0, 2.2, 1.9, 2.5],
      [2.1, 2.2, 1.8, 2.0, 2.4],
    ];
    expect(bootstrap({ target: 1.05, seed: 7 }, samples, ratioOfMedians)).toEqual(bootstrap({ target: 1.05, seed: 7 }, samples, ratioOfMedians));
  });
});

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

describe("comparing traced and untraced swarms against the target", () => {
  it.each([
    ["tracing costs nothing measurable", [on(2.0), off(2.0), on(2.01), off(1.99), on(1.99), off(2.01)], "shown"],
    ["tracing costs 20% every time", [on(2.4), off(2.0), on(2.41), off(1.99), on(2.39), off(2.01)], "exceeded"],
    ["the pairs disagree by more than 5%", [on(2.4), off(2.0), on(1.7), off(2.3), on(2.1), off(1.8)], "not_settled"],
    // The load doubles halfway: each pair ran at one load, but other flips of the coins would have
    // paired swarms across the doubling, so eight swarms cannot tell 5% (the bootstrap over the
    // pairs as they fell said 1.00x–1.01x).
    ["a doubling of the load halfway through eight swarms", [on(1.0), off(1.0), on(1.01), off(1.0), on(2.0), off(2.0), on(2.02), off(2.0)], "not_settled"],
    ["a slow drift, tracing free", Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? on(2 * (1 + 0.002 * i)) : off(2 * (1 + 0.002 * i)))), "shown"],
    ["one pair only: the medians' interval decides", [on(2.0), off(2.0), on(2.01)], "shown"],
    ["one pair only, spread wide", [on(2.0), off(1.6), off(2.4)], "not_settled"],
  ] as const)("%s: %s", (_, rounds, verdict) => {
    expect(compareTracedRounds(rounds, { target: 1.05 })?.verdict).toBe(verdict);
  });

  it("has each side's median, their ratio and each pair's ratio", () => {
    const comparison = compareTracedRounds([on(2.2), off(2.0), off(1.0), on(1.1), on(3.3)], { target: 1.05 });
    expect(comparison).toMatchObject({ traced: [2.2, 1.1, 3.3], untraced: [2.0, 1.0], tracedMedian: 2.2, untracedMedian: 1.5 });
    expect(comparison?.ratio).toBeCloseTo(2.2 / 1.5, 12);
    expect(comparison?.pairRatios.map((r) => Number(r.toFixed(6)))).toEqual([1.1, 1.1]);
    expect(comparison?.paired?.ratio).toBeCloseTo(1.1, 12);
  });

  it.each([
    ["no untraced swarm", [on(2)]],
    ["no traced swarm", [off(2)]],
    ["untraced CPU not measured (0)", [on(2), off(0)]],
  ])("none with %s", (_, rounds) => {
    expect(compareTracedRounds(rounds, { target: 1.05 })).toBeNull();
  });

  it("prints every swarm's figure, the medians, the ratios and the verdict", () => {
    const comparison = compareTracedRounds(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? on(2.0) : off(2.0))),
      { target: 1.05 },
    );
    if (comparison === null) throw new Error("no comparison");
    expect(formatTraceComparison(comparison, 1.05)).toEqual([
      "  traced   cpu/task per swarm (ms, in the order run): 2.00 2.00 2.00 2.00 2.00 2.00  median 2.000 ms",
      "  untraced cpu/task per swarm (ms, in the order run): 2.00 2.00 2.00 2.00 2.00 2.00  median 2.000 ms",
      "  ratio of the medians traced/untraced: 1.000x (bootstrap 90% interval 1.000x–1.000x)",
      "  neighbouring pairs traced/untraced: 1.000x 1.000x 1.000x 1.000x 1.000x 1.000x; geometric mean 1.000x (randomization 90% interval 1.000x–1.000x; bootstrap over the pairs 1.000x–1.000x), lowest–highest 1.000x–1.000x",
      "  target ≤ 1.05x: shown: the whole paired interval is at or below 1.05x",
    ]);
  });
});

describe("the randomization interval of the pairs' mean", () => {
  it("holds the pairs' mean, and is the same for the same figures and seed", () => {
    const rounds = [on(2.1), off(2.0), off(1.9), on(2.05), on(2.2), off(2.1), on(1.95), off(1.9), off(2.0), on(2.1)];
    const interval = randomizationInterval([rounds], { target: 1.05, seed: 3 });
    const mean = compareTracedRounds(rounds, { target: 1.05 })?.paired?.ratio ?? Number.NaN;
    expect(interval.low).toBeLessThan(mean);
    expect(interval.high).toBeGreaterThan(mean);
    expect(randomizationInterval([rounds], { target: 1.05, seed: 3 })).toEqual(interval);
  });

  it("has no bound when too few swarms could have fallen otherwise (three orders of four swarms)", () => {
    expect(randomizationInterval([[on(2.0), off(2.0), on(2.0), off(2.0)]], { target: 1.05 })).toEqual({
      low: 0,
      high: Number.POSITIVE_INFINITY,
      level: 0.9,
    });
  });

  it("keeps each run's swarms, and each run's last flip, to itself", () => {
    // Two runs of a constant 10% cost at loads 1 and 3: no order pairs across them, so the interval stays narrow.
    const run = (load: number) => Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? on(1.1 * load) : off(load)));
    const interval = randomizationInterval([run(1), run(3)], { target: 1.05 });
    expect(interval.low).toBeCloseTo(1.1, 6);
    expect(interval.high).toBeCloseTo(1.1, 6);
  });

  // A seeded simulation of the bench: swarms flip the coin until 8 of each side have run (at most
  // 24); the machine's load wanders in phases longer than a swarm (AR(1)); each swarm's own noise 5%.
  it("covers the true ratio about as often as it says, where the bootstrap over the pairs does not", () => {
    const prng = createPrng(42);
    const simulate = (ratio: number): TracedRound[] => {
      const rounds: TracedRound[] = [];
      let load = 0;
      const count = { on: 0, off: 0 };
      for (let i = 0; i < 24 && (count.on < 8 || count.off < 8); i += 1) {
        load = 0.8 * load + 0.05 * prng.normal();
        const traced = prng.next() < 0.5;
        count[traced ? "on" : "off"] += 1;
        rounds.push({ traced, cpuPerTask: Math.exp(load + 0.05 * prng.normal()) * (traced ? ratio : 1) });
      }
      return rounds;
    };
    const covered = { randomization: 0, bootstrap: 0, benches: 0 };
    for (let bench = 0; bench < 150; bench += 1) {
      const paired = compareTracedRounds(simulate(1.05), { target: 1.05, resamples: 500 })?.paired;
      if (paired === null || paired === undefined) continue;
      covered.benches += 1;
      if (paired.interval.low <= 1.05 && paired.interval.high >= 1.05) covered.randomization += 1;
      if (paired.bootstrap.low <= 1.05 && paired.bootstrap.high >= 1.05) covered.bootstrap += 1;
    }
    expect(covered.benches).toBe(150);
    // 90% intervals: the randomization's covers 0.83–0.97 of the benches; the bootstrap's, blind to other pairings, fewer.
    expect(covered.randomization / covered.benches).toBeGreaterThanOrEqual(0.83);
    expect(covered.randomization / covered.benches).toBeLessThanOrEqual(0.97);
    expect(covered.bootstrap).toBeLessThan(covered.randomization);
  });
});

describe("a saved --trace output, read back", () => {
  it("gives the measured swarms in the order run, as the bench printed them", () => {
    const text = [
      "warm-up (not in the figures; …): n=20 ok=20",
      `${formatTracedSwarm(1, true, 2.41)} spans=2001 chat=1000 (ledger 1000) roots=1 settled 0.55 s after the end`,
      "n=1000 ok=1000 err=0 wall=4.1 s",
      `${formatTracedSwarm(2, false, 2.3)} spans=0 chat=0 (ledger 1000) roots=0 settled 0.60 s after the end`,
      `${formatTracedSwarm(3, false, null)} spans=0`,
      "swarm 4:",
    ].join("\n");
    expect(parseTracedRounds(text)).toEqual([on(2.41), off(2.3)]);
  });

  it("pairs each run's swarms within that run, never across two", () => {
    // Run 1 ends on a traced swarm and run 2 starts untraced: they are not a pair.
    const comparison = compareTracedRuns(
      [
        [off(2.0), on(2.2), on(9.0)],
        [off(1.0), on(1.1)],
      ],
      { target: 1.05 },
    );
    expect(comparison?.pairRatios.map((r) => Number(r.toFixed(6)))).toEqual([1.1, 1.1]);
    expect(comparison).toMatchObject({ traced: [2.2, 9.0, 1.1], untraced: [2.0, 1.0] });
  });
});
