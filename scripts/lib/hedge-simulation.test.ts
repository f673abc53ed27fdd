// The hedging simulation (`npm run sim:hedging`): deterministic by seed, never over the limit, no
// backup without a limit, and, over a fixed set of seeds, paced first asks ahead of first come,
// first served (the claim the policy's comment makes).
import { describe, expect, it } from "vitest";
import { simulateHedgedSwarm, summarizeWalls, type HedgeSimulation } from "./hedge-simulation.ts";

const SWARM: HedgeSimulation = { tasks: 400, window: 100, limit: 20, afterMs: 1_300, latency: { dist: "lognormal", median: 300, p95: 1_500 }, seed: 7 };

describe("a simulated hedged swarm", () => {
  it("is the same swarm for the same seed", () => {
    expect(simulateHedgedSwarm(SWARM, "paced")).toEqual(simulateHedgedSwarm(SWARM, "paced"));
    expect(simulateHedgedSwarm({ ...SWARM, seed: 8 }, "paced")).not.toEqual(simulateHedgedSwarm(SWARM, "paced"));
  });

  it("sends no backup without a limit, and never more than the limit", () => {
    expect(simulateHedgedSwarm({ ...SWARM, limit: 0 }, "paced").sent).toBe(0);
    for (let seed = 1; seed <= 20; seed += 1) {
      for (const policy of ["paced", "first_come"] as const) expect(simulateHedgedSwarm({ ...SWARM, seed }, policy).sent).toBeLessThanOrEqual(SWARM.limit);
    }
  });

  it("over 100 seeds, paced first asks take a shorter mean and p90 wall than first come, first served", () => {
    const walls = { paced: [] as number[], first_come: [] as number[] };
    for (let seed = 1; seed <= 100; seed += 1) {
      for (const policy of ["paced", "first_come"] as const) walls[policy].push(simulateHedgedSwarm({ ...SWARM, seed }, policy).wallMs);
    }
    const paced = summarizeWalls(walls.paced);
    const firstCome = summarizeWalls(walls.first_come);
    expect(paced.meanMs).toBeLessThan(firstCome.meanMs);
    expect(paced.p90Ms).toBeLessThan(firstCome.p90Ms);
  });

  it("changes nothing for a swarm whose calls all start together (they pass the delay together)", () => {
    for (let seed = 1; seed <= 20; seed += 1) {
      const oneRound = { ...SWARM, seed, tasks: 100, window: 100, limit: 5 };
      expect(simulateHedgedSwarm(oneRound, "paced")).toEqual(simulateHedgedSwarm(oneRound, "first_come"));
    }
  });
});

describe("walls summarized", () => {
  it.each([
    [[], { meanMs: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0 }],
    [[5], { meanMs: 5, p50Ms: 5, p90Ms: 5, p99Ms: 5 }],
    [[4, 1, 3, 2], { meanMs: 2.5, p50Ms: 3, p90Ms: 4, p99Ms: 4 }],
  ])("%j", (walls, expected) => {
    expect(summarizeWalls(walls)).toEqual(expected);
  });
});
