// The swarm's trace: its trace id and root span id, made at start when the orchestrator traces
// (OTEL_* set) and kept in the room's storage, so every ticket and pull hands lanes the same
// `traceparent`; and the root span, exported once when the swarm has ended. Traces off: it stores,
// sends and exports nothing.
import { toSwarmSpan } from "../core/genai-spans.ts";
import type { TraceSettings } from "../core/otel-settings.ts";
import { formatTraceparent, isSampled, newSpanId, newTraceId, type SpanContext } from "../core/trace-context.ts";
import { createSpanRecorder, type ExportTally } from "../telemetry/span-exporter.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";

/** The swarm's root span, as stored (one key of the room's synchronous KV storage). */
interface StoredTrace extends SpanContext {
  /** The root span went out (or was dropped): never again. */
  ended: boolean;
}

const TRACE_KEY = "trace";

const randomBytes = (n: number): Uint8Array => crypto.getRandomValues(new Uint8Array(n));

export class SwarmTrace {
  /** undefined: not read yet in this instance. */
  private stored: StoredTrace | null | undefined;
  private traceparentText: string | undefined;

  constructor(
    private readonly kv: SyncKvStorage,
    private readonly settings: TraceSettings | null,
    private readonly fetcher: typeof fetch = fetch,
  ) {}

  /** A new swarm: its trace id and root span id (and whether it is sampled), when tracing is on. */
  begin(): void {
    if (this.settings === null || this.load() !== null) return;
    const traceId = newTraceId(randomBytes);
    const trace: StoredTrace = { traceId, spanId: newSpanId(randomBytes), sampled: isSampled(traceId, this.settings.sampleRatio), ended: false };
    this.kv.put(TRACE_KEY, trace);
    this.stored = trace;
  }

  /** What tickets and pulls carry; undefined when the swarm has no trace (or tracing is off: nothing is read). */
  traceparent(): string | undefined {
    if (this.settings === null) return undefined;
    const trace = this.load();
    if (trace === null) return undefined;
    this.traceparentText ??= formatTraceparent(trace);
    return this.traceparentText;
  }

  /**
   * The swarm has ended: its root span goes out once (from its creation to its end). Returns the
   * export to hand to waitUntil, or null when there is nothing to send.
   */
  end(swarm: SwarmRow, costUsd: () => number): Promise<ExportTally> | null {
    if (this.settings === null) return null;
    const trace = this.load();
    if (trace === null || trace.ended || swarm.finished_at === null) return null;
    const ended: StoredTrace = { ...trace, ended: true };
    this.kv.put(TRACE_KEY, ended);
    this.stored = ended;
    if (!trace.sampled) return null;
    const spans = createSpanRecorder({ settings: this.settings, fetch: this.fetcher });
    spans.record(
      toSwarmSpan({
        place: { traceId: trace.traceId, spanId: trace.spanId, parentSpanId: null },
        swarmId: swarm.id,
        name: swarm.name,
        startMs: swarm.created_at,
        endMs: swarm.finished_at,
        state: swarm.state,
        tasks: swarm.task_count,
        costUsd: costUsd(),
      }),
    );
    return spans.flush().then(() => spans.tally);
  }

  private load(): StoredTrace | null {
    if (this.stored === undefined) this.stored = this.kv.get<StoredTrace>(TRACE_KEY) ?? null;
    return this.stored;
  }
}
