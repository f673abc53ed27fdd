// The event stream's loop on its own, fed a scripted sequence of statuses: which events it writes,
// when it stops, and what a failing poll shows the client.
import { SSEStreamingApi } from "hono/streaming";
import { describe, expect, it, vi } from "vitest";
import type { SwarmState, SwarmStatus } from "../../../src/core/swarm-contract.ts";
import { streamSwarmEvents } from "../swarm-events.ts";

function status(state: SwarmState, succeeded: number, wall_s: number): SwarmStatus {
  return {
    id: "sw_aaaaaaaaaaaaaaaaaaaa",
    name: "s",
    estimated_calls: 0,
    state,
    model: "mock-1",
    tasks: 2,
    window: 2,
    counts: { queued: 0, running: 2 - succeeded, succeeded, failed: 0, cancelled: 0, skipped_budget: 0 },
    usage: { calls: 0, prompt_tokens: 0, cached_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    cost_usd: 0,
    wall_s,
    latency_ms: { p50: null, p95: null },
    output: null,
    plan: null,
    tool_calls: 0,
    reduction: null,
    reduce: { kind: "collect" },
    max_window: 4,
    retries: { used: 0, budget: 10 },
    circuits: [],
    reason: null,
    models: [{ model: "mock-1", weight: 1 }],
    budget: null,
    metadata: {},
    billable: { queue_messages_sent: 1, queue_messages_received: 1, do_requests: 3, do_rows_written: 12, d1_rows_written: 2, per_task: null },
    created_at: "2031-01-01T00:00:00.000Z",
    finished_at: null,
  };
}

/** Runs the loop to its end against a real SSE stream and returns what the client would read. */
async function run(first: SwarmStatus, polls: (SwarmStatus | null | Error)[], extra: { heartbeatMs?: number; maxMs?: number } = {}): Promise<string> {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const stream = new SSEStreamingApi(writable, readable);
  const text = new Response(stream.responseReadable).text();
  const poll = vi.fn(async () => {
    const next = polls.shift();
    if (next instanceof Error) throw next;
    return next ?? null;
  });
  await streamSwarmEvents(stream, { first, poll, requestId: "req-1", pollMs: 0, ...extra });
  await stream.close();
  return text;
}

const eventsOf = (text: string): string[] => [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1] ?? "");

describe("streamSwarmEvents", () => {
  it("emits a status only when something but the wall clock changed, then done", async () => {
    const text = await run(status("running", 0, 1), [status("running", 0, 2), status("running", 1, 3), status("completed", 2, 4)]);
    expect(eventsOf(text)).toEqual(["status", "status", "status", "done"]);
    expect(text).toContain('"state":"completed"');
    expect(text).toContain('event: done\ndata: {"id":"sw_aaaaaaaaaaaaaaaaaaaa","state":"completed"}');
  });

  it.each<SwarmState>(["completed", "completed_with_failures", "failed", "cancelled"])("stops at once for a swarm already %s", async (state) => {
    const text = await run(status(state, 2, 1), [status("running", 0, 2)]);
    expect(eventsOf(text)).toEqual(["status", "done"]);
  });

  it("ends without done when the swarm disappears", async () => {
    const text = await run(status("running", 0, 1), [null]);
    expect(eventsOf(text)).toEqual(["status"]);
  });

  it("ends at its time bound", async () => {
    const text = await run(status("running", 0, 1), [status("running", 1, 2)], { maxMs: 0 });
    expect(eventsOf(text)).toEqual(["status"]);
  });

  it("keeps an unchanged stream alive with comment lines", async () => {
    const text = await run(status("running", 0, 1), [status("running", 0, 2), null], { heartbeatMs: 0 });
    expect(text).toContain(": keep-alive\n\n");
    expect(eventsOf(text)).toEqual(["status"]);
  });

  it("reports a failing poll as a public internal error, logging the cause", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const text = await run(status("running", 0, 1), [new Error("RPC secret detail")]);
      expect(eventsOf(text)).toEqual(["status", "error"]);
      expect(text).toContain('"code":"internal"');
      expect(text).toContain('"request_id":"req-1"');
      expect(text).not.toContain("secret detail");
      expect(logged).toHaveBeenCalled();
    } finally {
      logged.mockRestore();
    }
  });
});
