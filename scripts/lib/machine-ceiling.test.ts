import { describe, expect, it } from "vitest";
import { machineCeiling } from "./machine-ceiling.ts";

describe("the calls this machine's CPU can keep in flight", () => {
  it.each([
    // cores, CPU ms a call (runner + mock), mean latency ms → calls a ms, mean in flight at most
    ["2 cores, 1 ms a call, 200 ms calls", 2, 1, 200, 2, 400],
    ["2 cores, 0.5 ms a call: twice the calls", 2, 0.5, 200, 4, 800],
    ["1 core, 2 ms a call, 3 s calls", 1, 2, 3_000, 0.5, 1_500],
    ["no latency: nothing stays in flight", 2, 1, 0, 2, 0],
  ])("%s", (_, cores, cpuMsPerCall, meanLatencyMs, callsPerMs, inFlight) => {
    const ceiling = machineCeiling({ cores, cpuMsPerCall, meanLatencyMs });
    expect(ceiling?.callsPerMs).toBeCloseTo(callsPerMs, 9);
    expect(ceiling?.inFlight).toBeCloseTo(inFlight, 9);
  });

  it.each([
    ["CPU per call unknown (no /proc)", 2, null, 200],
    ["no CPU measured", 2, 0, 200],
    ["no cores", 0, 1, 200],
    ["a negative latency", 2, 1, -1],
    ["NaN CPU", 2, Number.NaN, 200],
  ])("none when %s", (_, cores, cpuMsPerCall, meanLatencyMs) => {
    expect(machineCeiling({ cores, cpuMsPerCall, meanLatencyMs })).toBeNull();
  });
});
