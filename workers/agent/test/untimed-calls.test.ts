// A lane's untimed calls: the mean time to headers, and how long the oldest call past its headers
// has run without an answer (the lower bound on the latency a lane sizes itself on before a call ends).
import { describe, expect, it } from "vitest";
import { createUntimedCalls } from "../untimed-calls.ts";

function clocked() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("a lane's calls before one is timed", () => {
  it("knows nothing before any headers", () => {
    const calls = createUntimedCalls(clocked().now);
    expect(calls.headersMs()).toBeNull();
    expect(calls.runningForMs()).toBe(0);
    expect(calls.size()).toBe(0);
  });

  it("counts the oldest call past its headers from when it was sent", () => {
    const clock = clocked();
    const calls = createUntimedCalls(clock.now);
    calls.headers("t1", 10);
    clock.advance(40);
    calls.headers("t2", 5);
    clock.advance(50);
    // t1 was sent 100 ms ago, t2 55 ms ago.
    expect(calls.runningForMs()).toBe(100);
    calls.ended("t1");
    expect(calls.runningForMs()).toBe(55);
    calls.ended("t2");
    expect(calls.runningForMs()).toBe(0);
    expect(calls.size()).toBe(0);
  });

  it("weighs each new time to headers in at a fifth, so the first call's alone does not size the lane", () => {
    const calls = createUntimedCalls(clocked().now);
    calls.headers("t1", 120);
    expect(calls.headersMs()).toBe(120);
    calls.headers("t2", 20);
    expect(calls.headersMs()).toBeCloseTo(100);
    calls.headers("t3", 20);
    expect(calls.headersMs()).toBeCloseTo(84);
  });

  it("keeps one entry a task: its next call's headers replace the last", () => {
    const clock = clocked();
    const calls = createUntimedCalls(clock.now);
    calls.headers("t1", 10);
    clock.advance(500);
    calls.headers("t1", 10);
    expect(calls.size()).toBe(1);
    expect(calls.runningForMs()).toBe(10);
  });

  it("ends a call it never saw without complaint, and counts negative times as 0", () => {
    const calls = createUntimedCalls(clocked().now);
    calls.ended("unknown");
    calls.headers("t1", -5);
    expect(calls.headersMs()).toBe(0);
    expect(calls.runningForMs()).toBe(0);
  });
});
