// Reads a streamed chat completion's body — server-sent events of JSON chunks, ended by
// `data: [DONE]` — as the openai SDK's Stream does in its default mode, but with one parser
// (eventsource-parser) and no async generators stacked on the body: in workerd those layers and
// the reader cancel the SDK makes at `[DONE]` cost about a third of a call's CPU
// (`npm run bench -- --workerd-cpu-prof`, docs/benchmarks.md). The SDK still builds the request
// (model-client.ts), and an HTTP error status still becomes its APIError; only a 2xx body is read here.
import { createParser } from "eventsource-parser";
import { isRecord } from "../core/is-record.ts";

/** An error event inside a 200 stream (`event: error`, or a chunk carrying `error`), as the SDK reports it. */
export class StreamErrorEvent extends Error {
  constructor(
    /** `data.error`, or the whole data of an `event: error` without one. */
    readonly body: unknown,
    readonly headers: Headers,
  ) {
    super("the upstream sent an error event in the stream");
    this.name = "StreamErrorEvent";
  }
}

/** What the SDK throws for an event whose data is not JSON (the same message). */
const MALFORMED_EVENT = "Error reading response: malformed server-sent event JSON.";

/**
 * Hands each JSON chunk of the stream to `onChunk`, in order, until `[DONE]` or the body's end.
 * Returns whether `[DONE]` came. Throws a SyntaxError for a chunk that is not JSON, a
 * StreamErrorEvent for an error event, and whatever reading the body throws (a cut connection).
 * `signal` aborting cancels the body, which ends the read as the body's end does (the caller knows
 * it aborted): an aborted fetch does not end a read already waiting on its body by itself.
 * After `[DONE]` the rest of the body is read off in the background instead of cancelled: a server
 * closes it right after, and reading the end is cheaper than a cancel.
 */
export async function readChatStream(response: Response, signal: AbortSignal, onChunk: (chunk: unknown) => void): Promise<{ completed: boolean }> {
  const body = response.body;
  if (body === null || signal.aborted) return { completed: false };
  let completed = false;
  let failure: Error | null = null;
  const parser = createParser({
    onEvent(event) {
      if (completed || failure !== null) return;
      if (event.data === "[DONE]") {
        completed = true;
        return;
      }
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        failure = new SyntaxError(MALFORMED_EVENT);
        return;
      }
      const error = isRecord(data) ? data.error : undefined;
      if (event.event === "error") failure = new StreamErrorEvent(error ?? data, response.headers);
      else if (error) failure = new StreamErrorEvent(error, response.headers);
      else onChunk(data);
    },
  });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let finished = false;
  const cancel = (): void => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", cancel, { once: true });
  try {
    while (!completed && failure === null) {
      const { value, done } = await reader.read();
      if (done) {
        finished = true;
        // A last line without its line break, and a last event without its blank line, still
        // count, as in the SDK (its line decoder's and SSE decoder's flush at the body's end).
        // (eventsource-parser's reset({ consume: true }) parses a last line but dispatches nothing.)
        parser.feed(`${decoder.decode()}\n\n`);
        break;
      }
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    signal.removeEventListener("abort", cancel);
    if (!finished && !signal.aborted) {
      if (completed) drainInBackground(reader);
      else void reader.cancel().catch(() => undefined);
    }
  }
  if (failure !== null) throw failure;
  return { completed };
}

/**
 * Reads what follows `[DONE]` (normally nothing but the end) without holding the call up; a body
 * that goes on is cancelled at its next chunk. A server that neither closes nor sends keeps the
 * read pending until the invocation ends, as it would keep the SDK's own stream.
 */
function drainInBackground(reader: ReadableStreamDefaultReader<Uint8Array>): void {
  void reader.read().then(
    ({ done }) => {
      if (!done) void reader.cancel().catch(() => undefined);
      else reader.releaseLock();
    },
    () => undefined,
  );
}
