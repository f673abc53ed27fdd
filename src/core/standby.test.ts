import { describe, expect, it } from "vitest";
import { freesSlot, STANDBY_MAX, standbyShare, standbyTarget } from "./standby.ts";
import type { TaskOutcome } from "./swarm-contract.ts";

describe("standby target", () => {
  it.each([
    ["first pull (no timing): half the concurrency, capped", { concurrency: 128, running: 0, latencyMs: null, refillMs: null }, 64],
    ["first pull, small lane: rounded up", { concurrency: 3, running: 0, latencyMs: null, refillMs: null }, 2],
    ["40 running × 100 ms, a 60 ms refill: 40/100 × 60 × 2", { concurrency: 128, running: 40, latencyMs: 100, refillMs: 60 }, 48],
    ["100 × 200 ms, 40 ms refill: 40 by rate, but half the running", { concurrency: 128, running: 100, latencyMs: 200, refillMs: 40 }, 50],
    ["slow calls end few at a time: half the running", { concurrency: 128, running: 10, latencyMs: 30_000, refillMs: 20 }, 5],
    ["one slow call: at least 1", { concurrency: 128, running: 1, latencyMs: 30_000, refillMs: 20 }, 1],
    ["nothing running: none (nothing will end to make room)", { concurrency: 128, running: 0, latencyMs: 200, refillMs: 40 }, 0],
    ["fast calls, slow refill: capped at STANDBY_MAX", { concurrency: 1_000, running: 1_000, latencyMs: 50, refillMs: 200 }, STANDBY_MAX],
    ["capped at the concurrency", { concurrency: 4, running: 4, latencyMs: 10, refillMs: 100 }, 4],
    ["no concurrency: none", { concurrency: 0, running: 0, latencyMs: null, refillMs: null }, 0],
    [
      "a header-bound lane of 6 waiting 1 s for company: 6/666 × 1030 × 2, within three times its slots",
      { concurrency: 128, slots: 6, running: 6, latencyMs: 666, refillMs: 1_030 },
      18,
    ],
    [
      "a header-bound lane of 6, 200 ms calls, a 410 ms refill: 6/200 × 410 × 2, three times its slots",
      { concurrency: 128, slots: 6, running: 6, latencyMs: 200, refillMs: 410 },
      18,
    ],
    ["the same lane, a 100 ms refill: by rate, 6/200 × 100 × 2", { concurrency: 128, slots: 6, running: 6, latencyMs: 200, refillMs: 100 }, 6],
    ["the same lane with a short refill: by rate", { concurrency: 128, slots: 6, running: 6, latencyMs: 666, refillMs: 300 }, 6],
    ["first pull of a lane of 6: half its slots", { concurrency: 128, slots: 6, running: 0, latencyMs: null, refillMs: null }, 3],
    ["slots over the concurrency count as the concurrency", { concurrency: 4, slots: 10, running: 4, latencyMs: 10, refillMs: 100 }, 4],
    ["no slots: none", { concurrency: 128, slots: 0, running: 0, latencyMs: null, refillMs: null }, 0],
    ["a zero latency counts as 1 ms: 2/1 × 5 × 2", { concurrency: 128, running: 2, latencyMs: 0, refillMs: 5 }, 20],
  ])("%s", (_label, input, expected) => {
    expect(standbyTarget(input)).toBe(expected);
  });
});

describe("a lane's share of standby tasks", () => {
  it.each([
    ["a swarm's start: 900 waiting over 17 lanes", { waiting: 900, openLanes: 17 }, 53],
    ["its end: 100 waiting over 17 lanes", { waiting: 100, openLanes: 17 }, 6],
    ["one task left: 1", { waiting: 1, openLanes: 17 }, 1],
    ["nothing left: none", { waiting: 0, openLanes: 17 }, 0],
    ["no open lane counted (a lane the room has not heard of yet): all of it", { waiting: 40, openLanes: 0 }, 40],
  ])("%s", (_label, input, expected) => {
    expect(standbyShare(input)).toBe(expected);
  });
});

describe("which ends free a slot for a standby task", () => {
  const failed = (retryable: boolean): TaskOutcome => ({ kind: "failed", class: "upstream_error", message: "boom", retryable, retryAfterMs: null });
  it.each([
    ["a success", { kind: "succeeded", output: "ok", finishReason: "stop" } as TaskOutcome, true],
    ["a failure never retried", failed(false), true],
    ["a retryable failure (it keeps its place to retry)", failed(true), false],
    ["a deferral (it keeps its place)", { kind: "deferred", retryAfterMs: 0, reason: "no key" } as TaskOutcome, false],
  ])("%s", (_label, outcome, expected) => {
    expect(freesSlot(outcome)).toBe(expected);
  });
});
