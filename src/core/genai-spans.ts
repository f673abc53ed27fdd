// The spans of a swarm's trace, shaped by the OpenTelemetry GenAI semantic conventions
// (open-telemetry/semantic-conventions-genai, "development" status in 2026: gen_ai.provider.name
// replaces the deprecated gen_ai.system): a root per swarm, `invoke_agent <task id>` per attempt,
// `chat <model>` per upstream call, `execute_tool <tool>` per tool call. Every span carries
// `edgeswarm.swarm_id`. Message content only when the caller passes it (opted in); keys and
// tokens never reach a span: none of these inputs holds one. No I/O.
import { toCallId } from "./ids.ts";
import type { ChatMessage } from "./agent-conversation.ts";
import type { CallRecord } from "./swarm-contract.ts";
import { SPAN_KIND, type SpanAttributes, type SpanLink, type TraceSpan } from "./trace-span.ts";

/** Where a span sits: its trace, its own id and its parent's (hex, or as bytes for genai-span-encoding.ts). */
export interface SpanPlace<Id = string> {
  traceId: Id;
  spanId: Id;
  parentSpanId: Id | null;
}

export const SWARM_ID_ATTRIBUTE = "edgeswarm.swarm_id";

export interface SwarmSpanInput {
  place: SpanPlace;
  swarmId: string;
  name: string | null;
  startMs: number;
  endMs: number;
  /** The swarm's end state (done, failed, cancelled…). */
  state: string;
  tasks: number;
  costUsd: number | null;
}

/** The root: the whole swarm, from its start to its end. */
export function toSwarmSpan(input: SwarmSpanInput): TraceSpan {
  return {
    ...toIds(input.place),
    name: `swarm ${input.name ?? input.swarmId}`,
    kind: SPAN_KIND.internal,
    startMs: input.startMs,
    endMs: input.endMs,
    attributes: {
      [SWARM_ID_ATTRIBUTE]: input.swarmId,
      "edgeswarm.swarm.state": input.state,
      "edgeswarm.swarm.tasks": input.tasks,
      ...(input.costUsd === null ? {} : { "gen_ai.usage.cost": input.costUsd }),
    },
    status: input.state === "failed" ? { code: 2, message: "the swarm failed" } : { code: 0 },
  };
}

export interface AttemptSpanInput<Id = string> {
  place: SpanPlace<Id>;
  swarmId: string;
  taskId: string;
  attempt: number;
  startMs: number;
  endMs: number;
  /** The attempt's outcome kind (succeeded, failed, deferred) and, when it failed, its class. */
  outcome: string;
  errorType: string | null;
  /** The span of the attempt before it (a retry links to it). */
  previous: { traceId: Id; spanId: Id } | null;
}

/** One attempt of a task: an agent invocation (`invoke_agent <task id>`). */
export function toAttemptSpan(input: AttemptSpanInput): TraceSpan {
  const links: SpanLink[] = input.previous === null ? [] : [{ ...input.previous, attributes: { "edgeswarm.link": "previous_attempt" } }];
  return {
    ...toIds(input.place),
    name: `invoke_agent ${input.taskId}`,
    kind: SPAN_KIND.internal,
    startMs: input.startMs,
    endMs: input.endMs,
    attributes: {
      [SWARM_ID_ATTRIBUTE]: input.swarmId,
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": input.taskId,
      "gen_ai.agent.id": `${input.swarmId}:${input.taskId}`,
      "edgeswarm.task_id": input.taskId,
      "edgeswarm.attempt": input.attempt,
      "edgeswarm.outcome": input.outcome,
      ...(input.errorType === null ? {} : { "error.type": input.errorType }),
    },
    status: input.errorType === null ? { code: 0 } : { code: 2, message: input.errorType },
    ...(links.length === 0 ? {} : { links }),
  };
}

export interface ChatSpanInput<Id = string> {
  place: SpanPlace<Id>;
  swarmId: string;
  taskId: string;
  attempt: number;
  /** The ledger's record of the call: model (the gateway name it was routed to), usage, timing. */
  call: CallRecord;
  /** gen_ai.provider.name (toProviderName). */
  provider: string;
  /** The id the upstream was sent (a gateway may rename the model). */
  upstreamModel: string;
  finishReason: string | null;
  /** USD, as the ledger prices the call; null when unpriced or without usage. */
  costUsd: number | null;
  maxOutputTokens: number;
  /** Only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. */
  content: { input: readonly ChatMessage[]; output: string | null } | null;
}

/** One upstream model call (`chat <model>`, kind CLIENT). */
export function toChatSpan(input: ChatSpanInput): TraceSpan {
  const { call } = input;
  const failed = call.status !== "ok";
  const errorType = failed ? (call.errorClass ?? "_OTHER") : null;
  const attributes: SpanAttributes = {
    [SWARM_ID_ATTRIBUTE]: input.swarmId,
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": input.provider,
    "gen_ai.request.model": call.model,
    "gen_ai.response.model": input.upstreamModel,
    "gen_ai.request.max_tokens": input.maxOutputTokens,
    "edgeswarm.task_id": input.taskId,
    "edgeswarm.attempt": input.attempt,
    "edgeswarm.turn": call.turn,
    "edgeswarm.call_id": toCallId(input.swarmId, input.taskId, input.attempt, call.turn, call.hedge !== undefined),
  };
  // A backup call (limits.hedge): whether its answer was the one kept.
  if (call.hedge !== undefined) attributes["edgeswarm.hedge"] = call.hedge;
  if (call.usage !== null) {
    attributes["gen_ai.usage.input_tokens"] = call.usage.prompt_tokens;
    attributes["gen_ai.usage.output_tokens"] = call.usage.completion_tokens;
    attributes["gen_ai.usage.cache_read.input_tokens"] = call.usage.cached_tokens;
  }
  if (input.costUsd !== null) attributes["gen_ai.usage.cost"] = input.costUsd;
  if (input.finishReason !== null) attributes["gen_ai.response.finish_reasons"] = [input.finishReason];
  if (call.ttfbMs !== undefined && call.ttfbMs !== null) attributes["edgeswarm.ttfb_ms"] = call.ttfbMs;
  if (errorType !== null) attributes["error.type"] = errorType;
  if (input.content !== null) {
    attributes["gen_ai.input.messages"] = JSON.stringify(input.content.input);
    if (input.content.output !== null) {
      attributes["gen_ai.output.messages"] = JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: input.content.output }] }]);
    }
  }
  return {
    ...toIds(input.place),
    name: `chat ${call.model}`,
    kind: SPAN_KIND.client,
    startMs: call.startedAt,
    endMs: call.startedAt + call.latencyMs,
    attributes,
    status: errorType === null ? { code: 0 } : { code: 2, message: errorType },
  };
}

export interface ToolSpanInput {
  place: SpanPlace;
  swarmId: string;
  taskId: string;
  tool: string;
  callId: string;
  startMs: number;
  endMs: number;
  /** The tool answered the model with an error (a tool error is a result, not a failed task). */
  failed: boolean;
  /** Only when content capture is on. */
  content: { arguments: string; result: string } | null;
  /** An MCP server's tool: its call's details (null: a built-in or webhook tool). */
  mcp?: ToolSpanMcp | null;
}

/** What an MCP tool's span adds (the OTel MCP conventions' client attributes, on the execute_tool span). */
export interface ToolSpanMcp {
  /** The spec's name for the server. */
  server: string;
  /** The tool's name on the server. */
  tool: string;
  address: string;
  port: number;
  protocolVersion: string | null;
  /** UTF-8 bytes of the answer the model got. */
  bytes: number;
  /** Low cardinality: tool_error (isError), timeout, an HTTP status, a JSON-RPC error code, …; null = none. */
  errorType: string | null;
}

/**
 * The OTel MCP conventions say an MCP instrumentation that finds the GenAI execute_tool span already
 * there adds its attributes to it rather than making a span of its own
 * (opentelemetry.io/docs/specs/semconv/gen-ai/mcp/, "Client"): `mcp.method.name`, `server.address`,
 * `server.port`, `network.transport`, `network.protocol.name`, `mcp.protocol.version`, and
 * `error.type` (`tool_error` when the result has isError). The server's name, the tool's own name
 * and the answer's size are edgeswarm's.
 */
function toMcpAttributes(mcp: ToolSpanMcp): Record<string, string | number> {
  return {
    "mcp.method.name": "tools/call",
    "server.address": mcp.address,
    "server.port": mcp.port,
    "network.transport": "tcp",
    "network.protocol.name": "http",
    ...(mcp.protocolVersion === null ? {} : { "mcp.protocol.version": mcp.protocolVersion }),
    "edgeswarm.mcp.server": mcp.server,
    "edgeswarm.mcp.tool": mcp.tool,
    "edgeswarm.mcp.result_bytes": mcp.bytes,
  };
}

/** One tool call (`execute_tool <tool>`). */
export function toToolSpan(input: ToolSpanInput): TraceSpan {
  const mcp = input.mcp ?? null;
  // An MCP call's own class of failure (a timeout, a 401, a JSON-RPC code) where it has one.
  const errorType = mcp?.errorType ?? (input.failed ? "tool_error" : null);
  return {
    ...toIds(input.place),
    name: `execute_tool ${input.tool}`,
    kind: SPAN_KIND.internal,
    startMs: input.startMs,
    endMs: input.endMs,
    attributes: {
      [SWARM_ID_ATTRIBUTE]: input.swarmId,
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": input.tool,
      "gen_ai.tool.call.id": input.callId,
      "gen_ai.tool.type": "function",
      "edgeswarm.task_id": input.taskId,
      ...(mcp === null ? {} : toMcpAttributes(mcp)),
      ...(errorType === null ? {} : { "error.type": errorType }),
      ...(input.content === null ? {} : { "gen_ai.tool.call.arguments": input.content.arguments, "gen_ai.tool.call.result": input.content.result }),
    },
    status: errorType === null ? { code: 0 } : { code: 2, message: errorType },
  };
}

/** Well-known upstream hosts → gen_ai.provider.name values of the conventions; other hosts speak OpenAI's API. */
const PROVIDER_BY_HOST: ReadonlyArray<[RegExp, string]> = [
  [/(^|\.)openai\.azure\.com$/, "azure.ai.openai"],
  [/(^|\.)openai\.com$/, "openai"],
  [/(^|\.)anthropic\.com$/, "anthropic"],
  [/(^|\.)generativelanguage\.googleapis\.com$/, "gcp.gemini"],
  [/(^|\.)aiplatform\.googleapis\.com$/, "gcp.vertex_ai"],
  [/(^|\.)deepseek\.com$/, "deepseek"],
  [/(^|\.)groq\.com$/, "groq"],
  [/(^|\.)mistral\.ai$/, "mistral_ai"],
  [/(^|\.)x\.ai$/, "x_ai"],
  [/(^|\.)perplexity\.ai$/, "perplexity"],
  [/(^|\.)cohere\.(com|ai)$/, "cohere"],
];

/** gen_ai.provider.name of an upstream, from its base URL. */
export function toProviderName(baseUrl: string): string {
  // The host of an absolute URL, without credentials or port (the core has no URL type: ssrf-guard.ts).
  const host = (/^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^/:?#]+)/i.exec(baseUrl.trim())?.[1] ?? "").toLowerCase();
  for (const [pattern, name] of PROVIDER_BY_HOST) if (pattern.test(host)) return name;
  return "openai";
}

function toIds(place: SpanPlace): Pick<TraceSpan, "traceId" | "spanId" | "parentSpanId"> {
  return { traceId: place.traceId, spanId: place.spanId, parentSpanId: place.parentSpanId };
}
