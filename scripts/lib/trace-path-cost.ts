// `npm run bench -- --trace`, beside the swarms: the CPU of a traced task's own work — its spans
// built (the inputs of `invoke_agent` and `chat`, their ids as bytes) and written as the OTLP protobuf
// a lane posts (genai-span-encoding.ts, as the agent's recorder writes them) — timed
// alone in this process, on the same V8 and the engine's own core modules as a lane in workerd.
// The swarms' figures hold everything (the post, the collector's socket) but swing with the load;
// this one holds only the JavaScript, and swings far less.
import { writeAttemptSpan, writeChatSpan } from "../../src/core/genai-span-encoding.ts";
import type { AttemptSpanInput, ChatSpanInput } from "../../src/core/genai-spans.ts";
import { ProtobufSpanBuffer } from "../../src/core/otlp-encoding.ts";
import { newSpanIdBytes, toAttemptSpanIdBytes, toIdBytes } from "../../src/core/trace-context.ts";

export interface TracePathCost {
  /** Median over the rounds, µs of CPU per task: building its spans, and encoding them. */
  buildUs: number;
  encodeUs: number;
  /**
   * The first round's build + encode, µs per task: the code not yet compiled, as in a lane whose
   * isolate has not run it lately (docs/benchmarks.md, "Settling it": three to four times the median).
   */
  firstRoundUs: number;
  /** Protobuf bytes per task. */
  bytesPerTask: number;
}

const TRACE_ID = "ab05e1f892d6ccecd7be5f8937f742d0";
const ROOT_SPAN_ID = "00f067aa0ba902b7";
const SWARM_ID = "sw_vubk2jal4pz2hspfnjxb";
const RESOURCE = { "service.name": "edgeswarm-agent", "telemetry.sdk.name": "edgeswarm", "telemetry.sdk.language": "webjs" };
const SCOPE = { name: "edgeswarm", version: "0.1.0" };

/** `rounds` rounds of `tasks` one-call tasks (one post per round, as a lane posts once); medians of the rounds. */
export function measureTracePathCpu(tasks: number, rounds: number): TracePathCost {
  const random = (n: number): Uint8Array => crypto.getRandomValues(new Uint8Array(n));
  const cpuUs = (): number => {
    const used = process.cpuUsage();
    return used.user + used.system;
  };
  const build: number[] = [];
  const encode: number[] = [];
  let bytes = 0;
  for (let round = 0; round < rounds; round += 1) {
    const chats: ChatSpanInput<Uint8Array>[] = [];
    const attempts: AttemptSpanInput<Uint8Array>[] = [];
    const started = cpuUs();
    const traceId = toIdBytes(TRACE_ID);
    const rootSpanId = toIdBytes(ROOT_SPAN_ID);
    for (let i = 0; i < tasks; i += 1) {
      const taskId = `task-${String(i + 1).padStart(4, "0")}`;
      const startMs = Date.now();
      const attemptSpanId = toAttemptSpanIdBytes(TRACE_ID, taskId, 1);
      const call = {
        turn: 1,
        model: "mock-1",
        usage: { prompt_tokens: 41, completion_tokens: 53, cached_tokens: 0, reasoning_tokens: 0, total_tokens: 94 },
        latencyMs: 201.5,
        ttfbMs: 12.25,
        status: "ok" as const,
        errorClass: null,
        startedAt: startMs,
      };
      chats.push({
        place: { traceId, spanId: newSpanIdBytes(random), parentSpanId: attemptSpanId },
        swarmId: SWARM_ID,
        taskId,
        attempt: 1,
        call,
        provider: "openai",
        upstreamModel: "mock-1",
        finishReason: "stop",
        costUsd: 0.000_025,
        maxOutputTokens: 32,
        content: null,
      });
      attempts.push({
        place: { traceId, spanId: attemptSpanId, parentSpanId: rootSpanId },
        swarmId: SWARM_ID,
        taskId,
        attempt: 1,
        startMs,
        endMs: startMs + 203,
        outcome: "succeeded",
        errorType: null,
        previous: null,
      });
    }
    const built = cpuUs();
    const buffer = new ProtobufSpanBuffer(RESOURCE, SCOPE);
    for (let i = 0; i < tasks; i += 1) {
      buffer.addWritten(writeChatSpan, chats[i] as ChatSpanInput<Uint8Array>);
      buffer.addWritten(writeAttemptSpan, attempts[i] as AttemptSpanInput<Uint8Array>);
    }
    bytes = buffer.take().length;
    const encoded = cpuUs();
    build.push((built - started) / tasks);
    encode.push((encoded - built) / tasks);
  }
  return { buildUs: medianOf(build), encodeUs: medianOf(encode), firstRoundUs: (build[0] ?? 0) + (encode[0] ?? 0), bytesPerTask: bytes / tasks };
}

function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}
