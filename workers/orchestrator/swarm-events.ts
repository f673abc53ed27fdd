// The event stream of GET /v1/swarms/:id/events: polls the swarm's status, emits `status` when it
// changes and `done` once it is terminal. Polling (not a room push) keeps the SwarmRoom unaware of
// HTTP clients; the stream is bounded so an abandoned one cannot hold an invocation forever.
import type { SSEStreamingApi } from "hono/streaming";
import { toErrorBody } from "../../src/core/errors.ts";
import type { SwarmState, SwarmStatus } from "../../src/core/swarm-contract.ts";

export const TERMINAL_SWARM_STATES: ReadonlySet<SwarmState> = new Set<SwarmState>(["completed", "completed_with_failures", "failed", "cancelled"]);

export interface SwarmEventsOptions {
  /** The status already read (the route reads it first, to answer 404 before streaming). */
  first: SwarmStatus;
  /** null: the swarm is gone, or the caller's key no longer opens the API; the stream ends. */
  poll: () => Promise<SwarmStatus | null>;
  requestId: string;
  pollMs?: number;
  /** Clients reconnect after this (EventSource does so by itself). */
  maxMs?: number;
  /** A comment line after this long without an event keeps proxies from closing an idle stream. */
  heartbeatMs?: number;
}

/** What counts as a change: everything but the wall clock, which moves on every poll of a running swarm. */
function toChangeKey(status: SwarmStatus): string {
  const { wall_s: _wallClock, ...rest } = status;
  return JSON.stringify(rest);
}

export async function streamSwarmEvents(stream: SSEStreamingApi, options: SwarmEventsOptions): Promise<void> {
  const { first, poll, requestId, pollMs = 1_000, maxMs = 15 * 60_000, heartbeatMs = 15_000 } = options;
  const deadline = Date.now() + maxMs;
  let lastSent = "";
  let lastWriteAt = Date.now();
  let status: SwarmStatus | null = first;
  try {
    while (status !== null && !stream.aborted) {
      const key = toChangeKey(status);
      if (key !== lastSent) {
        await stream.writeSSE({ event: "status", data: JSON.stringify(status) });
        lastSent = key;
        lastWriteAt = Date.now();
      } else if (Date.now() - lastWriteAt >= heartbeatMs) {
        await stream.write(": keep-alive\n\n");
        lastWriteAt = Date.now();
      }
      if (TERMINAL_SWARM_STATES.has(status.state)) {
        await stream.writeSSE({ event: "done", data: JSON.stringify({ id: status.id, state: status.state }) });
        return;
      }
      if (Date.now() >= deadline) return;
      await stream.sleep(pollMs);
      if (stream.aborted) return;
      status = await poll();
    }
  } catch (error) {
    // streamSSE's own error path would send the raw message to the client; log it and send the
    // public shape instead.
    console.error(`[${requestId}] swarm event stream failed`, error);
    await stream.writeSSE({ event: "error", data: JSON.stringify(toErrorBody("internal", "the event stream failed", [], requestId)) });
  }
}
