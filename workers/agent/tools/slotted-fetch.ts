// The fetch every tool's outbound request goes through (http_fetch, webhooks, MCP): each request
// holds one connection slot of the invocation's header gate, through the tools' share, from before
// it is sent until its response headers arrive. That is what the platform counts: "Each Worker
// invocation can have up to six connections simultaneously waiting for response headers … a
// connection is freed as soon as response headers arrive" (developers.cloudflare.com/workers/platform/limits/
// and the changelog entry "Relaxed simultaneous connection limiting for Workers", 2026-04-09), so a
// streamed body (an SSE answer, a long page) holds no slot while it is read.
import { untilAborted } from "./http-fetch.ts";

/** Takes a connection slot; the function it resolves to frees it (idempotent). */
export type TakeSlot = () => Promise<() => void>;

/**
 * `fetchFn` behind the gate. A request whose signal aborts while it waits for a slot leaves at once
 * (its slot, when it comes, goes straight back).
 */
export function toSlottedFetch(fetchFn: typeof fetch, takeSlot: TakeSlot): typeof fetch {
  return async (input, init) => {
    const signal = init?.signal ?? (input instanceof Request ? input.signal : null);
    const taking = takeSlot();
    let release: () => void;
    try {
      release = signal === null ? await taking : await untilAborted(taking, signal);
    } catch (error) {
      // Aborted while waiting: the slot, when it comes, goes straight back.
      taking.then((late) => late()).catch(() => {});
      throw error;
    }
    try {
      return await fetchFn(input, init);
    } finally {
      // Headers are in (or the request failed): the slot goes back, as a model call's does.
      release();
    }
  };
}
