// The trace-path bench's driver Worker: POST /run runs `tasks` one-call tasks' worth of the agent's
// per-task tracing, by one of the modes below, and answers what its recorder counted. It measures
// nothing itself: the bench reads workerd's CPU around each run.
import type { PriceTable } from "../../src/core/pricing.ts";
import type { CallRecord, ClaimedTask, TaskReport } from "../../src/core/swarm-contract.ts";
import type { ModelCallResult } from "../../src/model/model-client.ts";
import { createSpanRecorder } from "../../src/telemetry/span-exporter.ts";
import { startTaskTrace, type LaneTracing } from "../../workers/agent/task-trace.ts";

/**
 * - `plain`: each task's call record and report, as an untraced lane makes them, and nothing else;
 * - `spans`: the same, traced as a lane traces a sampled swarm (startTaskTrace, chat, end: its two
 *   spans written into the recorder's protobuf), the body "posted" to a fetch that answers at once
 *   without any I/O;
 * - `export`: `spans`, its body POSTed for real to `collectorUrl` (the recorder's fetch, the bench's
 *   receiver), through whatever a local Worker's fetch passes through (miniflare's outbound
 *   interceptor in `wrangler dev`).
 */
const MODES = ["plain", "spans", "export"] as const;
type Mode = (typeof MODES)[number];

interface RunRequest {
  mode: Mode;
  tasks: number;
  collectorUrl: string;
}

const SWARM_ID = "sw_tracepathbench0000001";
const PARENT = { traceId: "ab05e1f892d6ccecd7be5f8937f742d0", spanId: "00f067aa0ba902b7", sampled: true };
const ROUTE = { baseUrl: "https://api.openai.com/v1", upstreamModel: "mock-1" };
const PRICES: PriceTable = { "mock-1": { input: 0.15, cached_input: 0.075, output: 0.6 } };

export default {
  async fetch(request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/healthz") return new Response("ok");
    if (url.pathname !== "/run" || request.method !== "POST") return new Response("not found", { status: 404 });
    const run = (await request.json()) as RunRequest;
    if (!MODES.includes(run.mode)) return Response.json({ error: `mode must be one of ${MODES.join(", ")}` }, { status: 400 });
    // Called unbound: workerd's fetch throws "Illegal invocation" as a method of another object.
    const send: typeof fetch = run.mode === "export" ? (input, init) => fetch(input, init) : async () => new Response(null, { status: 200 });
    const tracing: LaneTracing | null =
      run.mode === "plain"
        ? null
        : {
            spans: createSpanRecorder({
              settings: {
                url: run.collectorUrl,
                headers: {},
                protocol: "http/protobuf",
                serviceName: "edgeswarm-agent",
                sampleRatio: 1,
                captureContent: false,
                timeoutMs: 10_000,
              },
              fetch: send,
            }),
            captureContent: false,
            prices: PRICES,
          };
    let kept = 0;
    for (let i = 0; i < run.tasks; i += 1) {
      const startMs = Date.now();
      const task = toTask(i, startMs);
      const trace = tracing === null ? undefined : startTaskTrace(tracing, PARENT, SWARM_ID, task, startMs);
      const call: CallRecord = {
        turn: 1,
        model: task.model,
        usage: { prompt_tokens: 41 + (i % 7), completion_tokens: 32, cached_tokens: 0, reasoning_tokens: 0, total_tokens: 73 + (i % 7) },
        latencyMs: 201.5,
        ttfbMs: 12.25,
        status: "ok",
        errorClass: null,
        startedAt: startMs,
      };
      const result: ModelCallResult = {
        ok: true,
        text: "done",
        finishReason: "stop",
        usage: call.usage,
        toolCalls: [],
        ttfbMs: 12.25,
        latencyMs: 201.5,
        startedAt: startMs,
      };
      trace?.chat(call, result, ROUTE, { messages: [{ role: "user", content: task.prompt }], maxOutputTokens: 32 });
      const report: TaskReport = { taskId: task.taskId, attempt: 1, outcome: { kind: "succeeded", output: "done", finishReason: "stop" }, calls: [call] };
      trace?.end(report, startMs + 203);
      kept += report.calls.length;
    }
    if (tracing === null) return Response.json({ calls: kept, recorded: 0, exported: 0, dropped: 0 });
    await tracing.spans.flush();
    const { recorded, exported, dropped } = tracing.spans.tally;
    return Response.json({ calls: kept, recorded, exported, dropped });
  },
} satisfies ExportedHandler;

function toTask(i: number, now: number): ClaimedTask {
  return {
    taskId: `task-${String(i + 1).padStart(5, "0")}`,
    attempt: 1,
    prompt: `trace path bench ${i + 1}: summarize item ${i + 1}`,
    model: "mock-1",
    timeoutS: 30,
    leaseUntil: now + 30_000,
    runUntil: now + 60_000,
    kind: "task",
    override: null,
    checkpoint: null,
  };
}
