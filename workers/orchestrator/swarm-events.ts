// The SSE stream of GET /v1/swarms/:id/events: a bridge from the SwarmRoom's live WebSocket (the
// room pushes coalesced events; nobody polls) to `id:`/`event:`/`data:` frames. It ends after
// `done`, when the room closes the socket, or at its time bound (EventSource clients reconnect
// with Last-Event-ID and lose nothing).
import type { SSEStreamingApi } from "hono/streaming";
import { toErrorBody } from "../../src/core/errors.ts";

export interface SwarmEventsOptions {
  /** The room's live socket, not yet accepted. */
  socket: WebSocket;
  /**
   * Asked every `recheckMs` while the stream is open: false (the caller's key was revoked or
   * expired) ends it with an `error` event, so a revoke shuts an open stream too.
   */
  stillAllowed?: () => Promise<boolean>;
  recheckMs?: number;
  requestId: string;
  /** Clients reconnect after this (EventSource does so by itself). */
  maxMs?: number;
  /** A comment line after this long without an event keeps proxies from closing an idle stream. */
  heartbeatMs?: number;
}

type Wire = { id: number; type: string; data: unknown };

export async function streamSwarmEvents(stream: SSEStreamingApi, options: SwarmEventsOptions): Promise<void> {
  const { socket, requestId, maxMs = 15 * 60_000, heartbeatMs = 15_000, stillAllowed, recheckMs = 5_000 } = options;
  let recheckAt = Date.now() + recheckMs;
  const queue: (Wire | "closed")[] = [];
  let wake: (() => void) | null = null;
  const push = (item: Wire | "closed") => {
    queue.push(item);
    wake?.();
  };
  socket.addEventListener("message", (event) => {
    try {
      push(JSON.parse(typeof event.data === "string" ? event.data : new TextDecoder().decode(event.data)) as Wire);
    } catch (error) {
      console.error(`[${requestId}] unreadable live event`, error);
    }
  });
  socket.addEventListener("close", () => push("closed"));
  socket.addEventListener("error", () => push("closed"));
  // A client that leaves releases the room's socket now, not at the next heartbeat.
  stream.onAbort(() => push("closed"));
  socket.accept();
  const deadline = Date.now() + maxMs;
  try {
    while (!stream.aborted && Date.now() < deadline) {
      if (stillAllowed !== undefined && Date.now() >= recheckAt) {
        recheckAt = Date.now() + recheckMs;
        if (!(await stillAllowed())) {
          await stream.writeSSE({ event: "error", data: JSON.stringify(toErrorBody("unauthorized", "the API key was revoked or has expired", [], requestId)) });
          return;
        }
      }
      const item = queue.shift();
      if (item === undefined) {
        const untilRecheck = stillAllowed === undefined ? heartbeatMs : Math.max(0, recheckAt - Date.now());
        const waitMs = Math.min(heartbeatMs, untilRecheck, Math.max(0, deadline - Date.now()));
        const arrived = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), waitMs);
          wake = () => {
            clearTimeout(timer);
            resolve(true);
          };
        });
        wake = null;
        if (!arrived && !stream.aborted && waitMs >= heartbeatMs) await stream.write(": keep-alive\n\n");
        continue;
      }
      if (item === "closed") return;
      await stream.writeSSE({ id: String(item.id), event: item.type, data: JSON.stringify(item.data) });
      if (item.type === "done") return;
    }
  } catch (error) {
    // streamSSE's own error path would send the raw message to the client; log it and send the public shape.
    console.error(`[${requestId}] swarm event stream failed`, error);
    await stream.writeSSE({ event: "error", data: JSON.stringify(toErrorBody("internal", "the event stream failed", [], requestId)) });
  } finally {
    try {
      socket.close(1000, "stream ended");
    } catch {
      // already closed by the room
    }
  }
}
