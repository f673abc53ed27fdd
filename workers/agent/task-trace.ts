// The spans of one task attempt in the agent: `invoke_agent <task id>` around the attempt, a
// `chat <model>` per upstream call and an `execute_tool <tool>` per tool call, under the swarm's
// root from the ticket's (or the pull's) traceparent. Built only when the invocation traces and
// the swarm's trace is sampled: with tracing off no lane makes one (zero spans, zero cost).
import type { ChatMessage } from "../../src/core/agent-conversation.ts";
import type { ModelRoute } from "../../src/core/gateway-config.ts";
import { toProviderName, toToolSpan, type ChatSpanInput, type ToolSpanMcp } from "../../src/core/genai-spans.ts";
import { costOfUsage, resolvePrice, type PriceTable } from "../../src/core/pricing.ts";
import type { CallRecord, ClaimedTask, TaskReport } from "../../src/core/swarm-contract.ts";
import type { ToolCall } from "../../src/core/tool-calls.ts";
import { newSpanId, newSpanIdBytes, toAttemptSpanIdBytes, toHexId, toIdBytes, type SpanContext } from "../../src/core/trace-context.ts";
import type { ModelCallResult } from "../../src/model/model-client.ts";
import type { DeferredSpan, SpanRecorder, SpanWriter } from "../../src/telemetry/span-exporter.ts";

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
  return new AttemptTrace(tracing, parent, swarmId, task, startMs);
}

/**
 * An attempt's spans. Its chat and invoke_agent spans are recorded as they end but built and written
 * when the lane's recorder posts (recordLater), all in one loop: the same work done at each call's
 * end, between the lane's stream reads and pulls, cost several times as much (docs/benchmarks.md,
 * "Tracing"). What they are built from is what the call and the attempt ended with, none of which
 * changes after. With content capture on, a chat span is written at once: the conversation it
 * records grows after the call.
 */
class AttemptTrace implements TaskTrace {
  readonly tracing: LaneTracing;
  readonly parent: SpanContext;
  readonly swarmId: string;
  readonly task: ClaimedTask;
  readonly startMs: number;
  /** The attempt's span id, made by the first span written (derived: attemptSpanId). */
  private spanIdBytes: Uint8Array | null = null;

  constructor(tracing: LaneTracing, parent: SpanContext, swarmId: string, task: ClaimedTask, startMs: number) {
    this.tracing = tracing;
    this.parent = parent;
    this.swarmId = swarmId;
    this.task = task;
    this.startMs = startMs;
  }

  /** Derived, not random: the next attempt links to this one without anyone storing its id. */
  spanId(): Uint8Array {
    this.spanIdBytes ??= toAttemptSpanIdBytes(this.parent.traceId, this.task.taskId, this.task.attempt);
    return this.spanIdBytes;
  }

  chat(
    call: CallRecord,
    result: ModelCallResult,
    route: Pick<ModelRoute, "baseUrl" | "upstreamModel">,
    request: { messages: readonly ChatMessage[]; maxOutputTokens: number },
  ): void {
    const finishReason = result.ok ? result.finishReason : null;
    if (!this.tracing.captureContent) {
      this.tracing.spans.recordLater(new DeferredChat(this, call, route, finishReason, request.maxOutputTokens));
      return;
    }
    this.tracing.spans.recordChat(
      toChatInput(this, call, route, finishReason, request.maxOutputTokens, { input: request.messages, output: result.ok ? result.text : null }),
    );
  }

  tool(call: ToolCall, toolStartMs: number, endMs: number, outcome: { ok: boolean; content: string; mcp?: ToolSpanMcp }): void {
    const { tracing, task } = this;
    tracing.spans.record(
      toToolSpan({
        place: { traceId: this.parent.traceId, spanId: newSpanId(randomBytes), parentSpanId: toHexId(this.spanId()) },
        swarmId: this.swarmId,
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
  }

  end(report: TaskReport, endMs: number): void {
    const { outcome } = report;
    this.tracing.spans.recordLater(new DeferredAttempt(this, endMs, outcome.kind, outcome.kind === "failed" ? outcome.class : null));
  }
}

/** A chat span's input, from what its call ended with. */
function toChatInput(
  attempt: AttemptTrace,
  call: CallRecord,
  route: Pick<ModelRoute, "baseUrl" | "upstreamModel">,
  finishReason: string | null,
  maxOutputTokens: number,
  content: ChatSpanInput["content"],
): ChatSpanInput<Uint8Array> {
  const { tracing, task } = attempt;
  const price = call.usage === null ? null : resolvePrice(tracing.prices, call.model);
  return {
    place: { traceId: toParentBytes(attempt.parent).traceIdBytes, spanId: newSpanIdBytes(randomBytes), parentSpanId: attempt.spanId() },
    swarmId: attempt.swarmId,
    taskId: task.taskId,
    attempt: task.attempt,
    call,
    provider: providerOf(route.baseUrl),
    upstreamModel: route.upstreamModel,
    finishReason,
    costUsd: call.usage !== null && price !== null ? costOfUsage(call.usage, price) : null,
    maxOutputTokens,
    content,
  };
}

class DeferredChat implements DeferredSpan {
  private readonly attempt: AttemptTrace;
  private readonly call: CallRecord;
  private readonly route: Pick<ModelRoute, "baseUrl" | "upstreamModel">;
  private readonly finishReason: string | null;
  private readonly maxOutputTokens: number;

  constructor(
    attempt: AttemptTrace,
    call: CallRecord,
    route: Pick<ModelRoute, "baseUrl" | "upstreamModel">,
    finishReason: string | null,
    maxOutputTokens: number,
  ) {
    this.attempt = attempt;
    this.call = call;
    this.route = route;
    this.finishReason = finishReason;
    this.maxOutputTokens = maxOutputTokens;
  }

  write(spans: SpanWriter): void {
    spans.recordChat(toChatInput(this.attempt, this.call, this.route, this.finishReason, this.maxOutputTokens, null));
  }
}

class DeferredAttempt implements DeferredSpan {
  private readonly attempt: AttemptTrace;
  private readonly endMs: number;
  private readonly outcome: string;
  private readonly errorType: string | null;

  constructor(attempt: AttemptTrace, endMs: number, outcome: string, errorType: string | null) {
    this.attempt = attempt;
    this.endMs = endMs;
    this.outcome = outcome;
    this.errorType = errorType;
  }

  write(spans: SpanWriter): void {
    const { attempt } = this;
    const { task } = attempt;
    const { traceIdBytes, spanIdBytes } = toParentBytes(attempt.parent);
    spans.recordAttempt({
      place: { traceId: traceIdBytes, spanId: attempt.spanId(), parentSpanId: spanIdBytes },
      swarmId: attempt.swarmId,
      taskId: task.taskId,
      attempt: task.attempt,
      startMs: attempt.startMs,
      endMs: this.endMs,
      outcome: this.outcome,
      errorType: this.errorType,
      previous: task.attempt > 1 ? { traceId: traceIdBytes, spanId: toAttemptSpanIdBytes(attempt.parent.traceId, task.taskId, task.attempt - 1) } : null,
    });
  }
}
