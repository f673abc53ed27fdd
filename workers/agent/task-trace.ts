// The spans of one task attempt in the agent: `invoke_agent <task id>` around the attempt, a
// `chat <model>` per upstream call and an `execute_tool <tool>` per tool call, under the swarm's
// root from the ticket's (or the pull's) traceparent. Built only when the invocation traces and
// the swarm's trace is sampled: with tracing off no lane makes one (zero spans, zero cost).
import type { ChatMessage } from "../../src/core/agent-conversation.ts";
import type { ModelRoute } from "../../src/core/gateway-config.ts";
import { toProviderName, toToolSpan, type ToolSpanMcp } from "../../src/core/genai-spans.ts";
import { costOfUsage, resolvePrice, type PriceTable } from "../../src/core/pricing.ts";
import type { CallRecord, ClaimedTask, TaskReport } from "../../src/core/swarm-contract.ts";
import type { ToolCall } from "../../src/core/tool-calls.ts";
import { newSpanId, newSpanIdBytes, toAttemptSpanIdBytes, toHexId, toIdBytes, type SpanContext } from "../../src/core/trace-context.ts";
import type { ModelCallResult } from "../../src/model/model-client.ts";
import type { SpanRecorder } from "../../src/telemetry/span-exporter.ts";

/** An invocation's tracing: where its spans go, whether content goes with them, and the ledger's prices. */
export interface LaneTracing {
  spans: SpanRecorder;
  captureContent: boolean;
  /** The prices the ledger uses (MODEL_PRICES over GATEWAY_CONFIG's), so a chat span's cost is its row's. */
  prices: PriceTable;
}

export interface TaskTrace {
  /** A model call ended. */
  chat(
    call: CallRecord,
    result: ModelCallResult,
    route: Pick<ModelRoute, "baseUrl" | "upstreamModel">,
    request: { messages: readonly ChatMessage[]; maxOutputTokens: number },
  ): void;
  /** A tool call ended (`ok` false: the tool answered with an error; `mcp`: an MCP tool's call). */
  tool(call: ToolCall, startMs: number, endMs: number, outcome: { ok: boolean; content: string; mcp?: ToolSpanMcp }): void;
  /** The attempt ended with `report`. */
  end(report: TaskReport, endMs: number): void;
}

/**
 * Span ids' random bytes, drawn 4 KB at a time (512 ids): one call into the runtime per 512 spans
 * rather than one per span. An isolate's spans share the pool; no id is drawn from it twice.
 */
const randomPool = new Uint8Array(4_096);
let randomUsed = randomPool.length;
function randomBytes(n: number): Uint8Array {
  if (randomUsed + n > randomPool.length) {
    crypto.getRandomValues(randomPool);
    randomUsed = 0;
  }
  const bytes = randomPool.subarray(randomUsed, randomUsed + n);
  randomUsed += n;
  return bytes;
}

/** gen_ai.provider.name by upstream base URL: a handful per gateway, looked up per call. */
const providers = new Map<string, string>();
function providerOf(baseUrl: string): string {
  let name = providers.get(baseUrl);
  if (name === undefined) {
    name = toProviderName(baseUrl);
    providers.set(baseUrl, name);
  }
  return name;
}

/** A lane's spans are under one swarm's root at a time: the root's ids as bytes are made once, not per task. */
let lastParent: { traceId: string; spanId: string; traceIdBytes: Uint8Array; spanIdBytes: Uint8Array } | null = null;
function toParentBytes(parent: SpanContext): { traceIdBytes: Uint8Array; spanIdBytes: Uint8Array } {
  if (lastParent === null || lastParent.traceId !== parent.traceId || lastParent.spanId !== parent.spanId) {
    lastParent = { traceId: parent.traceId, spanId: parent.spanId, traceIdBytes: toIdBytes(parent.traceId), spanIdBytes: toIdBytes(parent.spanId) };
  }
  return lastParent;
}

/** Starts the spans of an attempt, under `parent` (the swarm's root). */
export function startTaskTrace(tracing: LaneTracing, parent: SpanContext, swarmId: string, task: ClaimedTask, startMs: number): TaskTrace {
  const traceId = parent.traceId;
  const { traceIdBytes, spanIdBytes: parentSpanId } = toParentBytes(parent);
  // Derived, not random: the next attempt links to this one without anyone storing its id.
  const spanId = toAttemptSpanIdBytes(traceId, task.taskId, task.attempt);
  return {
    chat(call, result, route, request) {
      const price = call.usage === null ? null : resolvePrice(tracing.prices, call.model);
      // chat and invoke_agent, a task's own spans, go into the body without a span object (genai-span-encoding.ts).
      tracing.spans.recordChat({
        place: { traceId: traceIdBytes, spanId: newSpanIdBytes(randomBytes), parentSpanId: spanId },
        swarmId,
        taskId: task.taskId,
        attempt: task.attempt,
        call,
        provider: providerOf(route.baseUrl),
        upstreamModel: route.upstreamModel,
        finishReason: result.ok ? result.finishReason : null,
        costUsd: call.usage !== null && price !== null ? costOfUsage(call.usage, price) : null,
        maxOutputTokens: request.maxOutputTokens,
        content: tracing.captureContent ? { input: request.messages, output: result.ok ? result.text : null } : null,
      });
    },
    tool(call, toolStartMs, endMs, outcome) {
      tracing.spans.record(
        toToolSpan({
          place: { traceId, spanId: newSpanId(randomBytes), parentSpanId: toHexId(spanId) },
          swarmId,
          taskId: task.taskId,
          tool: call.name,
          callId: call.id,
          startMs: toolStartMs,
          endMs,
          failed: !outcome.ok,
          content: tracing.captureContent ? { arguments: call.rawArguments, result: outcome.content } : null,
          mcp: outcome.mcp ?? null,
        }),
      );
    },
    end(report, endMs) {
      const { outcome } = report;
      tracing.spans.recordAttempt({
        place: { traceId: traceIdBytes, spanId, parentSpanId },
        swarmId,
        taskId: task.taskId,
        attempt: task.attempt,
        startMs,
        endMs,
        outcome: outcome.kind,
        errorType: outcome.kind === "failed" ? outcome.class : null,
        previous: task.attempt > 1 ? { traceId: traceIdBytes, spanId: toAttemptSpanIdBytes(traceId, task.taskId, task.attempt - 1) } : null,
      });
    },
  };
}
