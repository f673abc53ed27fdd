// Sends a Worker's spans to an OTLP/HTTP collector: one buffer per invocation (a lane executor's
// alarm, a queue batch, a SwarmRoom request), encoded span by span (a lane's task spans all at
// once, when it posts: recordLater), posted when it fills and at the invocation's end.
// Each post is bounded by the settings' timeout; a failed one is dropped and counted, never retried
// (the spans are observability, not the ledger: a dead collector must cost a swarm nothing).
import { toHexAttemptInput, toHexChatInput, writeAttemptSpan, writeChatSpan } from "../core/genai-span-encoding.ts";
import { toAttemptSpan, toChatSpan, type AttemptSpanInput, type ChatSpanInput } from "../core/genai-spans.ts";
import { ProtobufSpanBuffer, toOtlpJson, writeSpan, type ProtoWriter } from "../core/otlp-encoding.ts";
import type { TraceSettings } from "../core/otel-settings.ts";
import type { TraceSpan } from "../core/trace-span.ts";
import { toErrorMessage } from "../core/error-message.ts";

/** The instrumentation scope every span is recorded under. */
export const TRACE_SCOPE = { name: "edgeswarm", version: "0.1.0" } as const;

/**
 * A buffer this full is posted at once, without waiting for the invocation's end: a bound on memory
 * (about 1 MB of protobuf), not a batching policy. Most lanes post once, after their last pull
 * (docs/benchmarks.md, "Tracing", has what smaller bounds cost).
 */
export const SPANS_PER_POST = 2_048;

export interface ExportTally {
  recorded: number;
  exported: number;
  /** Spans of posts that failed (refused, timed out, unreachable): dropped. */
  dropped: number;
  failedPosts: number;
}

/** Writes spans into the body being buffered, at once. */
export interface SpanWriter {
  record(span: TraceSpan): void;
  /**
   * toChatSpan's and toAttemptSpan's spans, from their inputs (ids as bytes): written straight into
   * the protobuf body, no TraceSpan in between (genai-span-encoding.ts); made as spans for JSON.
   */
  recordChat(input: ChatSpanInput<Uint8Array>): void;
  recordAttempt(input: AttemptSpanInput<Uint8Array>): void;
}

/**
 * A span recorded now and written later, when its recorder posts: `write` writes its one span then
 * (so it must hold only what cannot change: the write may be seconds later).
 */
export interface DeferredSpan {
  write(spans: SpanWriter): void;
}

export interface SpanRecorder extends SpanWriter {
  /**
   * A span whose input is built and written when the recorder posts, all of them in one loop: a
   * task's spans made at each call's end, between a lane's other events, cost several times what
   * the same work costs in a loop (docs/benchmarks.md, "Tracing").
   */
  recordLater(span: DeferredSpan): void;
  /** Posts what is buffered and waits for every post of this recorder; never throws, never waits past the timeout. */
  flush(): Promise<void>;
  readonly tally: ExportTally;
}

export interface SpanExporterOptions {
  settings: TraceSettings;
  fetch: typeof fetch;
}

/** A recorder for one invocation. */
export function createSpanRecorder(options: SpanExporterOptions): SpanRecorder {
  const { settings } = options;
  const tally: ExportTally = { recorded: 0, exported: 0, dropped: 0, failedPosts: 0 };
  const pending = new Set<Promise<void>>();
  const resource = { "service.name": settings.serviceName, "telemetry.sdk.name": "edgeswarm", "telemetry.sdk.language": "webjs" };
  const json = settings.protocol === "http/json";
  // Protobuf (the default): each span becomes bytes when it is recorded and its objects die young
  // (ProtobufSpanBuffer says why). JSON (opted in) keeps the spans until the post.
  const protobuf = json ? null : new ProtobufSpanBuffer(resource, TRACE_SCOPE);
  let jsonSpans: TraceSpan[] = [];
  let deferred: DeferredSpan[] = [];
  const waiting = (): number => (protobuf?.count ?? jsonSpans.length) + deferred.length;

  const failed = (spans: number, failure: string): void => {
    tally.dropped += spans;
    tally.failedPosts += 1;
    // Only the status or the error's message: never the URL's credentials or the headers.
    console.warn(JSON.stringify({ event: "trace_export_failed", spans, failure }));
  };

  const post = (): void => {
    writeDeferred();
    const spans = waiting();
    // Every deferred span was dropped: nothing to send.
    if (spans === 0) return;
    let body: Uint8Array | string;
    try {
      body = protobuf !== null ? protobuf.take() : toOtlpJson([{ resource, scope: TRACE_SCOPE, spans: jsonSpans }]);
    } catch (error) {
      // Tracing never stops a swarm: a body that cannot be written is dropped like a failed post.
      failed(spans, toErrorMessage(error));
      return;
    } finally {
      jsonSpans = [];
    }
    const sent = postBody(options, body).then((failure) => {
      if (failure === null) tally.exported += spans;
      else failed(spans, failure);
    });
    pending.add(sent);
    void sent.finally(() => pending.delete(sent));
  };

  const dropped = (error: unknown): void => {
    // Tracing never stops a swarm: a span that cannot be encoded is dropped and counted.
    tally.dropped += 1;
    console.warn(JSON.stringify({ event: "trace_span_dropped", error: toErrorMessage(error) }));
  };

  /** Writes a span by `write` (protobuf) or makes it by `toSpan` (JSON); one that cannot be is dropped and counted. */
  const put = <T>(write: (writer: ProtoWriter, input: T) => void, toSpan: (input: T) => TraceSpan, input: T): void => {
    try {
      if (protobuf === null) jsonSpans.push(toSpan(input));
      else protobuf.addWritten(write, input);
    } catch (error) {
      dropped(error);
    }
  };

  /** What a deferred span writes into: the spans are counted when they were recorded. */
  const writer: SpanWriter = {
    record: (span) => put(writeSpan, asIs, span),
    recordChat: (input) => put(writeChatSpan, toJsonChatSpan, input),
    recordAttempt: (input) => put(writeAttemptSpan, toJsonAttemptSpan, input),
  };

  const writeDeferred = (): void => {
    if (deferred.length === 0) return;
    const spans = deferred;
    deferred = [];
    for (const span of spans) {
      try {
        span.write(writer);
      } catch (error) {
        dropped(error);
      }
    }
  };

  const counted = (): void => {
    tally.recorded += 1;
    if (waiting() >= SPANS_PER_POST) post();
  };

  return {
    tally,
    record(span) {
      writer.record(span);
      counted();
    },
    recordChat(input) {
      writer.recordChat(input);
      counted();
    },
    recordAttempt(input) {
      writer.recordAttempt(input);
      counted();
    },
    recordLater(span) {
      deferred.push(span);
      counted();
    },
    async flush() {
      if (waiting() > 0) post();
      await Promise.all([...pending]);
    },
  };
}

function asIs(span: TraceSpan): TraceSpan {
  return span;
}

function toJsonChatSpan(input: ChatSpanInput<Uint8Array>): TraceSpan {
  return toChatSpan(toHexChatInput(input));
}

function toJsonAttemptSpan(input: AttemptSpanInput<Uint8Array>): TraceSpan {
  return toAttemptSpan(toHexAttemptInput(input));
}

/** One POST of an encoded body; null when the collector took it, else why not (a status or an error's message). */
async function postBody(options: SpanExporterOptions, body: Uint8Array | string): Promise<string | null> {
  const { settings } = options;
  // Called unbound: workerd's fetch throws "Illegal invocation" when called as a method of another object.
  const send = options.fetch;
  try {
    const response = await send(settings.url, {
      method: "POST",
      headers: { ...settings.headers, "content-type": typeof body === "string" ? "application/json" : "application/x-protobuf" },
      body,
      signal: AbortSignal.timeout(settings.timeoutMs),
    });
    // The body is not needed; reading it frees the connection.
    await response.body?.cancel();
    return response.ok ? null : `HTTP ${response.status}`;
  } catch (error) {
    return toErrorMessage(error);
  }
}
