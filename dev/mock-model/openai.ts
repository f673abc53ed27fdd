// OpenAI wire format: request validation, error bodies, completion objects and SSE chunks.

import type { PromptMessage } from "./text.ts";
import type { Usage } from "./stats.ts";
import { wireToolCalls } from "./tool-dialect.ts";
import type { ToolCall, ToolDialect } from "./tool-dialect.ts";

export type { ToolCall } from "./tool-dialect.ts";

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export const errorBody = (message: string, type: string, param: string | null = null, code: string | null = null): ErrorBody => ({
  error: { message, type, param, code },
});

export type ResponseFormat = { type: "text" } | { type: "json_object" } | { type: "json_schema"; schema: unknown; name: string };

export interface ToolDef {
  name: string;
  parameters: unknown;
}

export interface ChatRequest {
  model: string;
  messages: PromptMessage[];
  /** max_completion_tokens ?? max_tokens */
  max_tokens: number | undefined;
  stream: boolean;
  include_usage: boolean;
  response_format: ResponseFormat;
  tools: ToolDef[];
  /** Raw `tools` as sent (counted in prompt tokens). */
  raw_tools: unknown;
  /** The tool the answer must call: set for tool_choice "required" (first tool) or a named function. */
  forced_tool: ToolDef | undefined;
  /** tool_choice "none": answer in text even when tools are offered. */
  tools_disabled: boolean;
  /** false when the request sets parallel_tool_calls: false (then one call per turn). */
  parallel_tool_calls: boolean;
}

export type Validated = { ok: true; value: ChatRequest } | { ok: false; error: ErrorBody };

const ROLES: ReadonlySet<string> = new Set(["system", "developer", "user", "assistant", "tool", "function"]);
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const invalid = (message: string, param: string | null, code: string | null): Validated => ({
  ok: false,
  error: errorBody(message, "invalid_request_error", param, code),
});
const typeName = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

/** Validates a parsed chat-completions body the way the OpenAI API reports errors. */
export function validateChatRequest(body: unknown): Validated {
  if (!isObj(body)) return invalid(`Invalid body: expected a JSON object, but got ${typeName(body)} instead.`, null, "invalid_type");
  const { model, messages } = body;
  if (model === undefined || model === null) return invalid("Missing required parameter: 'model'.", "model", "missing_required_parameter");
  if (typeof model !== "string" || model === "")
    return invalid(`Invalid type for 'model': expected a non-empty string, but got ${typeName(model)} instead.`, "model", "invalid_type");
  if (messages === undefined || messages === null) return invalid("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  if (!Array.isArray(messages))
    return invalid(`Invalid type for 'messages': expected an array of objects, but got ${typeName(messages)} instead.`, "messages", "invalid_type");
  if (messages.length === 0)
    return invalid("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array");
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (!isObj(m)) return invalid(`Invalid type for 'messages[${i}]': expected an object, but got ${typeName(m)} instead.`, `messages[${i}]`, "invalid_type");
    if (typeof m.role !== "string" || !ROLES.has(m.role))
      return invalid(`Invalid value for 'messages[${i}].role': ${JSON.stringify(m.role)}.`, `messages[${i}].role`, "invalid_value");
    const c = m.content;
    if (c !== undefined && c !== null && typeof c !== "string" && !Array.isArray(c))
      return invalid(
        `Invalid type for 'messages[${i}].content': expected a string or an array, but got ${typeName(c)} instead.`,
        `messages[${i}].content`,
        "invalid_type",
      );
  }
  const echo = checkToolCallIds(messages as Array<Record<string, unknown>>);
  if (echo !== undefined) return echo;

  let maxTokens: number | undefined;
  for (const param of ["max_completion_tokens", "max_tokens"] as const) {
    const v = body[param];
    if (v === undefined || v === null) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1) return invalid(`Invalid '${param}': expected an integer ≥ 1.`, param, "invalid_value");
    maxTokens ??= v;
  }

  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean")
    return invalid("Invalid type for 'stream': expected a boolean.", "stream", "invalid_type");
  const streamOptions = body.stream_options;
  const includeUsage = isObj(streamOptions) && streamOptions.include_usage === true;

  let responseFormat: ResponseFormat = { type: "text" };
  const rf = body.response_format;
  if (rf !== undefined && rf !== null) {
    if (!isObj(rf)) return invalid("Invalid type for 'response_format': expected an object.", "response_format", "invalid_type");
    if (rf.type === "json_object") responseFormat = { type: "json_object" };
    else if (rf.type === "json_schema") {
      const js = rf.json_schema;
      if (!isObj(js)) return invalid("Missing required parameter: 'response_format.json_schema'.", "response_format.json_schema", "missing_required_parameter");
      responseFormat = { type: "json_schema", schema: js.schema ?? {}, name: typeof js.name === "string" ? js.name : "response" };
    } else if (rf.type !== "text")
      return invalid(`Invalid value for 'response_format.type': ${JSON.stringify(rf.type)}.`, "response_format.type", "invalid_value");
  }

  const tools: ToolDef[] = [];
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) return invalid("Invalid type for 'tools': expected an array.", "tools", "invalid_type");
    for (const t of body.tools) {
      const fn = isObj(t) && isObj(t.function) ? t.function : undefined;
      if (fn !== undefined && typeof fn.name === "string") tools.push({ name: fn.name, parameters: fn.parameters ?? { type: "object", properties: {} } });
    }
  }
  let forced: ToolDef | undefined;
  const tc = body.tool_choice;
  if (tc === "required") forced = tools[0];
  else if (isObj(tc) && isObj(tc.function) && typeof tc.function.name === "string") {
    const name = tc.function.name;
    forced = tools.find((t) => t.name === name);
    if (forced === undefined) return invalid(`Invalid 'tool_choice': function '${name}' is not in 'tools'.`, "tool_choice", "invalid_value");
  }

  return {
    ok: true,
    value: {
      model,
      messages: messages as PromptMessage[],
      max_tokens: maxTokens,
      stream: body.stream === true,
      include_usage: includeUsage,
      response_format: responseFormat,
      tools,
      raw_tools: body.tools,
      forced_tool: forced,
      tools_disabled: tc === "none",
      parallel_tool_calls: body.parallel_tool_calls !== false,
    },
  };
}

/**
 * Every `tool` message must answer a call of an earlier assistant message: its tool_call_id must
 * be one of their `tool_calls[].id` (Moonshot rejects ids that were not echoed exactly; the mock
 * holds every dialect to it). Gemini issues "" ids and clients make up their own, so the ids are
 * matched as the assistant messages carry them.
 */
function checkToolCallIds(messages: ReadonlyArray<Record<string, unknown>>): Validated | undefined {
  const issued = new Set<string>();
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m === undefined) continue;
    if (m.role === "assistant" && Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls) if (isObj(c) && typeof c.id === "string") issued.add(c.id);
    } else if (m.role === "tool") {
      const id = m.tool_call_id;
      if (typeof id !== "string")
        return invalid(`Missing required parameter: 'messages[${i}].tool_call_id'.`, `messages[${i}].tool_call_id`, "missing_required_parameter");
      if (!issued.has(id)) {
        return invalid(
          `Invalid 'messages[${i}].tool_call_id': tool_call_id ${JSON.stringify(id)} does not match any tool call of an earlier assistant message.`,
          `messages[${i}].tool_call_id`,
          "invalid_value",
        );
      }
    }
  }
  return undefined;
}

export interface Answer {
  content: string | null;
  tool_calls: ToolCall[] | undefined;
  /** How tool calls go on the wire (ids were already made for it). */
  dialect: ToolDialect;
  finish_reason: "stop" | "length" | "tool_calls";
  usage: Usage;
}

export interface ChunkMeta {
  id: string;
  created: number;
  model: string;
}

/** A non-streaming `chat.completion` object with the vendor-shaped `usage` (omitted when undefined). */
export function completionObject(meta: ChunkMeta, a: Answer, usage: Record<string, unknown> | undefined): Record<string, unknown> {
  const message: Record<string, unknown> = { role: "assistant", content: a.content, refusal: null, annotations: [] };
  if (a.tool_calls !== undefined) message.tool_calls = wireToolCalls(a.dialect, a.tool_calls);
  const obj: Record<string, unknown> = {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: a.finish_reason }],
    service_tier: "default",
    system_fingerprint: "mock",
  };
  if (usage !== undefined) obj.usage = usage;
  return obj;
}

/**
 * One SSE event carrying a `chat.completion.chunk`. `usage` is the top-level field (null = "usage
 * requested, not in this chunk"; undefined = absent); `choiceUsage` goes into `choices[0].usage`
 * (Moonshot/Kimi).
 */
export function chunkEvent(
  meta: ChunkMeta,
  delta: Record<string, unknown> | null,
  finish: string | null,
  usage: Record<string, unknown> | null | undefined,
  choiceUsage?: Record<string, unknown>,
): string {
  const choice: Record<string, unknown> = { index: 0, delta, logprobs: null, finish_reason: finish };
  if (choiceUsage !== undefined) choice.usage = choiceUsage;
  const obj: Record<string, unknown> = {
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    service_tier: "default",
    system_fingerprint: "mock",
    choices: delta === null ? [] : [choice],
  };
  if (usage !== undefined) obj.usage = usage;
  return `data: ${JSON.stringify(obj)}\n\n`;
}

export const DONE_EVENT = "data: [DONE]\n\n";
