// Sends a Worker's spans to an OTLP/HTTP collector: one buffer per invocation (a lane executor's
// alarm, a queue batch, a SwarmRoom request), posted when it fills and at the invocation's end.
// Each post is bounded by the settings' timeout; a failed one is dropped and counted, never retried
// (the spans are observability, not the ledger: a dead collector must cost a swarm nothing).
import { toOtlpJson, toOtlpProtobuf, type SpanBatch } from "../core/otlp-encoding.ts";
import type { TraceSettings } from "../core/otel-settings.ts";
import type { TraceSpan } from "../core/trace-span.ts";
import { toErrorMessage } from "../core/error-message.ts";

/** The instrumentation scope every span is recorded under. */
export const TRACE_SCOPE = { name: "edgeswarm", version: "0.1.0" } as const;

/**
 * A buffer this full is posted at once, without waiting for the invocation's end: a bound on memory
 * (about 1 MB of protobuf), not a batching policy. Encoding is synchronous, so a post in the middle of
 * a lane holds its event loop for a moment; at 512 that happened a few times per 1,000 tasks and
 * delayed the lane's running calls (fewer in flight, more CPU a task), so most lanes now post once,
 * after their last pull.
 */
export const SPANS_PER_POST = 2_048;

export interface ExportTally {
  recorded: number;
  exported: number;
  /** Spans of posts that failed (refused, timed out, unreachable): dropped. */
  dropped: number;
  failedPosts: number;
}

export interface SpanRecorder {
  record(span: TraceSpan): void;
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
  let buffer: TraceSpan[] = [];
  const resource = { "service.name": settings.serviceName, "telemetry.sdk.name": "edgeswarm", "telemetry.sdk.language": "webjs" };

  const post = (spans: TraceSpan[]): void => {
    const sent = postSpans(options, [{ resource, scope: TRACE_SCOPE, spans }]).then((failure) => {
      if (failure === null) tally.exported += spans.length;
      else {
        tally.dropped += spans.length;
        tally.failedPosts += 1;
        // Only the status or the error's message: never the URL's credentials or the headers.
        console.warn(JSON.stringify({ event: "trace_export_failed", spans: spans.length, failure }));
      }
    });
    pending.add(sent);
    void sent.finally(() => pending.delete(sent));
  };

  return {
    tally,
    record(span) {
      tally.recorded += 1;
      buffer.push(span);
      if (buffer.length >= SPANS_PER_POST) {
        post(buffer);
        buffer = [];
      }
    },
    async flush() {
      if (buffer.length > 0) {
        post(buffer);
        buffer = [];
      }
      await Promise.all([...pending]);
    },
  };
}

/** One POST of spans; null when the collector took them, else why not (a status or an error's message). */
async function postSpans(options: SpanExporterOptions, batches: SpanBatch[]): Promise<string | null> {
  const { settings } = options;
  // Called unbound: workerd's fetch throws "Illegal invocation" when called as a method of another object.
  const send = options.fetch;
  const json = settings.protocol === "http/json";
  try {
    const response = await send(settings.url, {
      method: "POST",
      headers: { ...settings.headers, "content-type": json ? "application/json" : "application/x-protobuf" },
      body: json ? toOtlpJson(batches) : toOtlpProtobuf(batches),
      signal: AbortSignal.timeout(settings.timeoutMs),
    });
    // The body is not needed; reading it frees the connection.
    await response.body?.cancel();
    return response.ok ? null : `HTTP ${response.status}`;
  } catch (error) {
    return toErrorMessage(error);
  }
}
