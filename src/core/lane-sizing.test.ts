import { describe, expect, it } from "vitest";
import { MAX_TICKETS_PER_SWARM, toLaneSlots, toTicketsToIssue } from "./lane-sizing.ts";

describe("lane slots", () => {
  it.each([
    ["no timing yet: the concurrency", 128, 6, { ttfbMs: null, latencyMs: null }, 128],
    ["no gate: the concurrency", 128, 0, { ttfbMs: 500, latencyMs: 1_000 }, 128],
    ["fast headers: the gate does not bind", 128, 6, { ttfbMs: 4, latencyMs: 200 }, 128],
    ["slow headers: 6 slots × 200 ms / 50 ms", 128, 6, { ttfbMs: 50, latencyMs: 200 }, 24],
    ["a streamed 10 s answer after 300 ms: 6 × 10,000 / 300", 1_000, 6, { ttfbMs: 300, latencyMs: 10_000 }, 200],
    ["headers are the whole call (not streamed): 6", 128, 6, { ttfbMs: 800, latencyMs: 800 }, 6],
    ["latency below ttfb counts as ttfb", 128, 6, { ttfbMs: 800, latencyMs: 100 }, 6],
    ["never below 1", 0, 6, { ttfbMs: 50, latencyMs: 200 }, 1],
    ["zero ttfb: the concurrency", 64, 6, { ttfbMs: 0, latencyMs: 200 }, 64],
  ])("%s", (_label, concurrency, slots, timing, expected) => {
    expect(toLaneSlots(concurrency, slots, timing)).toBe(expected);
  });
});

describe("tickets to issue", () => {
  it.each([
    ["a new window of 100 at 128 slots a ticket", { demand: 100, coveredSlots: 0, openTickets: 0, slotsPerTicket: 128 }, 1],
    ["a window of 1,000 at 128 a ticket", { demand: 1_000, coveredSlots: 0, openTickets: 0, slotsPerTicket: 128 }, 8],
    ["covered: none", { demand: 100, coveredSlots: 128, openTickets: 1, slotsPerTicket: 128 }, 0],
    ["lanes smaller than assumed: one more", { demand: 100, coveredSlots: 60, openTickets: 1, slotsPerTicket: 60 }, 1],
    ["nothing left to run: none", { demand: 0, coveredSlots: 0, openTickets: 0, slotsPerTicket: 128 }, 0],
    ["at most the queue's consumer concurrency", { demand: 10_000, coveredSlots: 0, openTickets: 0, slotsPerTicket: 1 }, MAX_TICKETS_PER_SWARM],
    ["counting the open ones", { demand: 10_000, coveredSlots: 240, openTickets: 240, slotsPerTicket: 1 }, MAX_TICKETS_PER_SWARM - 240],
    ["a zero slot guess counts as 1", { demand: 3, coveredSlots: 0, openTickets: 0, slotsPerTicket: 0 }, 3],
  ])("%s", (_label, input, expected) => {
    expect(toTicketsToIssue(input)).toBe(expected);
  });
});
