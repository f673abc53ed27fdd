import { describe, expect, it } from "vitest";
import { measureTracePathCpu } from "./trace-path-cost.ts";

describe("the traced path's own CPU, timed alone", () => {
  it("gives CPU a task for building and encoding, and the protobuf bytes of a task's two spans", () => {
    const cost = measureTracePathCpu(200, 3);
    expect(Number.isFinite(cost.buildUs) && cost.buildUs >= 0).toBe(true);
    expect(Number.isFinite(cost.encodeUs) && cost.encodeUs >= 0).toBe(true);
    expect(Number.isFinite(cost.firstRoundUs) && cost.firstRoundUs >= 0).toBe(true);
    // A chat span and an invoke_agent span with their GenAI attributes: a few hundred bytes each.
    expect(cost.bytesPerTask).toBeGreaterThan(400);
    expect(cost.bytesPerTask).toBeLessThan(1_500);
  });
});
