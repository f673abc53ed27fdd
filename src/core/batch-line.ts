// The OpenAI Batch API's JSONL lines: checking an input line, the reference a batch task carries to
// its line, the body sent upstream, and the output and error lines. No I/O.
// Shapes: OpenAI's Batch guide (platform.openai.com/docs/guides/batch) and openai-node's
// src/resources/batches.ts (BatchError { code, line, message, param }, BatchRequestCounts).
import { z } from "zod";
import { ModelNameSchema } from "./spec-schema.ts";
import { err, ok, type Result } from "./result.ts";
import type { ToolCall } from "./tool-calls.ts";
import type { Usage } from "./usage.ts";

/** The one endpoint batches run (the chat completions every OpenAI-compatible upstream serves). */
export const BATCH_ENDPOINT = "/v1/chat/completions";
/** OpenAI's own cap on one batch's requests. */
export const MAX_BATCH_LINES = 50_000;
/** Errors kept on a failed batch: enough to fix a file, never a file's worth. */
export const MAX_BATCH_ERRORS = 100;

/** A body's fields the engine sets itself: the routed model, and streaming (it always streams, with usage). */
const ENGINE_FIELDS = new Set(["model", "stream", "stream_options"]);

export const BatchBodySchema = z.looseObject({
  model: ModelNameSchema.optional(),
  messages: z.array(z.looseObject({ role: z.string().min(1) })).min(1, "messages must hold at least one message"),
  max_tokens: z.number().int().positive().optional(),
  max_completion_tokens: z.number().int().positive().optional(),
});
export type BatchBody = z.infer<typeof BatchBodySchema>;

export const BatchLineSchema = z.strictObject({
  custom_id: z.string().min(1, "custom_id must not be empty").max(512),
  method: z.literal("POST", "method must be POST"),
  url: z.string(),
  body: BatchBodySchema,
});

/** One entry of a failed batch's `errors.data`; `line` is 1-based. */
export interface BatchLineError {
  code: string;
  message: string;
  line: number;
  param: string | null;
}

export interface CheckedLine {
  customId: string;
  /** The model the line runs on: the batch's override, else its own `body.model`. */
  model: string;
  /** Its output budget: the body's max_tokens (or max_completion_tokens), when it sets one. */
  maxTokens: number | null;
}

export interface LineRules {
  endpoint: string;
  /** metadata["edgeswarm.model"]: replaces every line's model. */
  modelOverride: string | null;
  /** Whether the gateway serves (and the tenant may use) a model. */
  isAllowedModel: (model: string) => boolean;
}

/**
 * Checks one line of an input file. `seen` holds the custom_ids of the lines before it (this line's
 * is added when it is new): a duplicate is reported at its second occurrence, as OpenAI does.
 */
export function checkBatchLine(text: string, line: number, rules: LineRules, seen: Set<string>): Result<CheckedLine, BatchLineError> {
  const fail = (code: string, message: string, param: string | null = null) => err({ code, message, line, param });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return fail("invalid_json_line", `line ${line} is not valid JSON`);
  }
  const parsed = BatchLineSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const param = issue === undefined || issue.path.length === 0 ? null : issue.path.map(String).join(".");
    return fail("invalid_request", `line ${line}: ${param ?? "(line)"}: ${issue?.message ?? "invalid"}`, param);
  }
  const { custom_id: customId, url, body } = parsed.data;
  if (url !== rules.endpoint) return fail("invalid_url", `line ${line}: url ${JSON.stringify(url)} is not the batch's endpoint ${rules.endpoint}`, "url");
  if (seen.has(customId)) return fail("duplicate_custom_id", `line ${line}: custom_id ${JSON.stringify(customId)} is used by an earlier line`, "custom_id");
  const model = rules.modelOverride ?? body.model;
  if (model === undefined) return fail("invalid_request", `line ${line}: body.model is missing`, "body.model");
  if (!rules.isAllowedModel(model)) return fail("model_not_found", `line ${line}: model ${JSON.stringify(model)} is not served here`, "body.model");
  seen.add(customId);
  return ok({ customId, model, maxTokens: body.max_completion_tokens ?? body.max_tokens ?? null });
}

/** Where a batch task's line sits in the input file: the task's prompt holds it as "offset:length". */
export interface LineRange {
  offset: number;
  length: number;
}

export function toLineRef(range: LineRange): string {
  return `${range.offset}:${range.length}`;
}

export function parseLineRef(text: string): LineRange | null {
  const match = /^(\d{1,15}):(\d{1,9})$/.exec(text);
  if (match === null) return null;
  return { offset: Number(match[1]), length: Number(match[2]) };
}

/** The body sent upstream: the line's own, less what the engine sets (model, streaming). */
export function toPassthroughBody(body: BatchBody): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([key]) => !ENGINE_FIELDS.has(key)));
}

export interface CompletedCall {
  /** `chatcmpl-…`: unique per line and attempt. */
  id: string;
  /** Epoch s. */
  created: number;
  model: string;
  text: string;
  finishReason: string | null;
  toolCalls: readonly ToolCall[];
  usage: Usage | null;
}

/** A (streamed) call's answer as the non-streaming `chat.completion` OpenAI's batch output holds. */
export function toChatCompletion(call: CompletedCall) {
  const message =
    call.toolCalls.length === 0
      ? { role: "assistant", content: call.text, refusal: null }
      : {
          role: "assistant",
          content: call.text === "" ? null : call.text,
          refusal: null,
          tool_calls: call.toolCalls.map((t) => ({ id: t.id, type: "function", function: { name: t.name, arguments: t.rawArguments } })),
        };
  return {
    id: call.id,
    object: "chat.completion",
    created: call.created,
    model: call.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: call.finishReason ?? "stop" }],
    usage:
      call.usage === null
        ? null
        : {
            prompt_tokens: call.usage.prompt_tokens,
            completion_tokens: call.usage.completion_tokens,
            total_tokens: call.usage.total_tokens,
            prompt_tokens_details: { cached_tokens: call.usage.cached_tokens },
            completion_tokens_details: { reasoning_tokens: call.usage.reasoning_tokens },
          },
  };
}

/** One line of the output file: the upstream's answer to a line. */
export function toOutputLine(input: { id: string; customId: string; requestId: string; body: unknown }): string {
  return `${JSON.stringify({ id: input.id, custom_id: input.customId, response: { status_code: 200, request_id: input.requestId, body: input.body }, error: null })}\n`;
}

/** One line of the error file: a line that failed (the upstream refused it, or the batch was cancelled). */
export function toErrorLine(input: { id: string; customId: string; code: string; message: string }): string {
  return `${JSON.stringify({ id: input.id, custom_id: input.customId, response: null, error: { code: input.code, message: input.message } })}\n`;
}
