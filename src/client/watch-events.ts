// The client's live event stream: GET /v1/swarms/:id/events read with fetch (so it sends the bearer
// token, which EventSource cannot) and parsed by eventsource-parser; a dropped connection is
// resumed with Last-Event-ID, so the caller sees every event once, in order, until `done`.
import { createParser } from "eventsource-parser";
import type { LiveEvent } from "../core/live-events.ts";
import { EdgeswarmError, toEdgeswarmError } from "./api-error.ts";

export interface WatchOptions {
  signal?: AbortSignal;
  /** Resume after this event id (a snapshot comes first when the room cannot replay from it). */
  lastEventId?: number;
  /** Reconnects in a row without an event before giving up (default 5). */
  maxReconnects?: number;
  /** Back-off before the n-th reconnect: n × this (default 500 ms). */
  reconnectDelayMs?: number;
}

export interface WatchTransport {
  url: string;
  headers: Record<string, string>;
  fetch: typeof fetch;
}

export async function* watchEvents(transport: WatchTransport, options: WatchOptions = {}): AsyncGenerator<LiveEvent> {
  let lastId = options.lastEventId ?? null;
  let failures = 0;
  const maxReconnects = options.maxReconnects ?? 5;
  for (;;) {
    const headers: Record<string, string> = { ...transport.headers, accept: "text/event-stream" };
    if (lastId !== null) headers["last-event-id"] = String(lastId);
    let response: Response;
    try {
      response = await transport.fetch(transport.url, { headers, signal: options.signal });
    } catch (error) {
      if (options.signal?.aborted) return;
      failures += 1;
      if (failures > maxReconnects) throw new EdgeswarmError({ code: "network", status: 0, message: `cannot reach ${transport.url}: ${String(error)}` });
      await delay(failures * (options.reconnectDelayMs ?? 500), options.signal);
      continue;
    }
    if (!response.ok) throw toEdgeswarmError(response.status, await response.text(), response.headers.get("retry-after"));
    const body = response.body;
    if (body === null) throw new EdgeswarmError({ code: "bad_response", status: response.status, message: "the event stream has no body" });
    const pending: LiveEvent[] = [];
    const parser = createParser({
      onEvent: (message) => {
        if (message.event === undefined || message.id === undefined) return;
        pending.push({ id: Number(message.id), type: message.event, data: JSON.parse(message.data) } as LiveEvent);
      },
    });
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        parser.feed(chunk.value);
        while (pending.length > 0) {
          const event = pending.shift() as LiveEvent;
          // A replay never repeats what was seen; a snapshot (a new base) always passes.
          if (lastId !== null && event.id <= lastId && event.type !== "snapshot") continue;
          lastId = event.id;
          failures = 0;
          yield event;
          if (event.type === "done") return;
        }
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      failures += 1;
      if (failures > maxReconnects) throw new EdgeswarmError({ code: "network", status: 0, message: `the event stream broke: ${String(error)}` });
    } finally {
      await reader.cancel().catch(() => {});
    }
    if (options.signal?.aborted) return;
    // The stream ended without `done` (its time bound, or a dropped connection): resume.
    await delay(failures * (options.reconnectDelayMs ?? 500), options.signal);
  }
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
