// The agent's per-task spans (`chat <model>`, `invoke_agent <task id>`) written straight into OTLP
// protobuf from their inputs, with ids as bytes: the bytes toOtlpProtobuf writes for toChatSpan's and
// toAttemptSpan's spans, without a TraceSpan, an attributes object or a hex id in between (the
// round-trip tests hold the two paths to the same bytes). genai-spans.ts stays the definition of
// what a span carries; an attribute added there is added here in the same place. No I/O.
import type { AttemptSpanInput, ChatSpanInput, SpanPlace } from "./genai-spans.ts";
import { SWARM_ID_ATTRIBUTE } from "./genai-spans.ts";
import { toCallId } from "./ids.ts";
import { ProtoWriter, SAMPLED_FLAGS, toKeyBytes, writeAttribute } from "./otlp-encoding.ts";
import { toHexId } from "./trace-context.ts";
import { SPAN_KIND } from "./trace-span.ts";

// Span's fields (opentelemetry-proto trace/v1/trace.proto).
const TRACE_ID = 1;
const SPAN_ID = 2;
const PARENT_SPAN_ID = 4;
const NAME = 5;
const KIND = 6;
const START = 7;
const END = 8;
const ATTRIBUTES = 9;
const LINKS = 13;
const STATUS = 15;
const FLAGS = 16;
/** Status { message = 2, code = 3 }: STATUS_CODE_ERROR. */
const STATUS_ERROR = 2;

const SWARM_ID = toKeyBytes(SWARM_ID_ATTRIBUTE);
const PROVIDER = toKeyBytes("gen_ai.provider.name");
const REQUEST_MODEL = toKeyBytes("gen_ai.request.model");
const RESPONSE_MODEL = toKeyBytes("gen_ai.response.model");
const MAX_TOKENS = toKeyBytes("gen_ai.request.max_tokens");
const TASK_ID = toKeyBytes("edgeswarm.task_id");
const ATTEMPT = toKeyBytes("edgeswarm.attempt");
const TURN = toKeyBytes("edgeswarm.turn");
const CALL_ID = toKeyBytes("edgeswarm.call_id");
const HEDGE = toKeyBytes("edgeswarm.hedge");
const INPUT_TOKENS = toKeyBytes("gen_ai.usage.input_tokens");
const OUTPUT_TOKENS = toKeyBytes("gen_ai.usage.output_tokens");
const CACHE_READ_TOKENS = toKeyBytes("gen_ai.usage.cache_read.input_tokens");
const COST = toKeyBytes("gen_ai.usage.cost");
const FINISH_REASONS = toKeyBytes("gen_ai.response.finish_reasons");
const TTFB = toKeyBytes("edgeswarm.ttfb_ms");
const ERROR_TYPE = toKeyBytes("error.type");
const INPUT_MESSAGES = toKeyBytes("gen_ai.input.messages");
const OUTPUT_MESSAGES = toKeyBytes("gen_ai.output.messages");
const AGENT_NAME = toKeyBytes("gen_ai.agent.name");
const AGENT_ID = toKeyBytes("gen_ai.agent.id");
const OUTCOME = toKeyBytes("edgeswarm.outcome");

/** A KeyValue whose key and value never change, as its bytes at `field`. */
function toConstantAttribute(field: number, key: string, value: string): Uint8Array {
  const writer = new ProtoWriter(64);
  writer.plainAttribute(field, toKeyBytes(key), value);
  return writer.finish();
}

const CHAT_OPERATION = toConstantAttribute(ATTRIBUTES, "gen_ai.operation.name", "chat");
const INVOKE_AGENT_OPERATION = toConstantAttribute(ATTRIBUTES, "gen_ai.operation.name", "invoke_agent");
/** Link.attributes = 4 of a retry's link to the attempt before it. */
const PREVIOUS_ATTEMPT_LINK = toConstantAttribute(4, "edgeswarm.link", "previous_attempt");

function writeIds(writer: ProtoWriter, place: SpanPlace<Uint8Array>): void {
  writer.bytes(TRACE_ID, place.traceId);
  writer.bytes(SPAN_ID, place.spanId);
  if (place.parentSpanId !== null) writer.bytes(PARENT_SPAN_ID, place.parentSpanId);
}

/** Status (only when it is an error, as writeSpan omits an unset one without a message) and flags. */
function writeStatusAndFlags(writer: ProtoWriter, errorType: string | null): void {
  if (errorType !== null) {
    const status = writer.beginMessage(STATUS);
    writer.string(2, errorType);
    writer.uint(3, STATUS_ERROR);
    writer.endMessage(status);
  }
  writer.fixed32(FLAGS, SAMPLED_FLAGS);
}

/**
 * The runs of a chat span's fields that are the same for every call of a lane's swarm and route:
 * its name and kind, and its first six attributes (swarm, operation, provider, models, max tokens).
 * Written once and copied into each span, not written value by value per call.
 */
interface ChatBlocks {
  swarmId: string;
  model: string;
  provider: string;
  upstreamModel: string;
  maxOutputTokens: number;
  nameAndKind: Uint8Array;
  routeAttributes: Uint8Array;
}

/** A lane calls one swarm's few routes: a handful of entries, the newest first, looked up by identity. */
const CHAT_BLOCKS_KEPT = 8;
const chatBlocks: ChatBlocks[] = [];

function chatBlocksOf(input: ChatSpanInput<Uint8Array>): ChatBlocks {
  const { swarmId, provider, upstreamModel, maxOutputTokens } = input;
  const model = input.call.model;
  for (const blocks of chatBlocks) {
    if (
      blocks.swarmId === swarmId &&
      blocks.model === model &&
      blocks.provider === provider &&
      blocks.upstreamModel === upstreamModel &&
      blocks.maxOutputTokens === maxOutputTokens
    ) {
      return blocks;
    }
  }
  const head = new ProtoWriter(128);
  head.string(NAME, `chat ${model}`);
  head.uint(KIND, SPAN_KIND.client);
  const route = new ProtoWriter(256);
  route.plainAttribute(ATTRIBUTES, SWARM_ID, swarmId);
  route.raw(CHAT_OPERATION);
  route.plainAttribute(ATTRIBUTES, PROVIDER, provider);
  route.plainAttribute(ATTRIBUTES, REQUEST_MODEL, model);
  route.plainAttribute(ATTRIBUTES, RESPONSE_MODEL, upstreamModel);
  writeAttribute(route, ATTRIBUTES, MAX_TOKENS, maxOutputTokens);
  const blocks: ChatBlocks = { swarmId, model, provider, upstreamModel, maxOutputTokens, nameAndKind: head.finish(), routeAttributes: route.finish() };
  if (chatBlocks.length === CHAT_BLOCKS_KEPT) chatBlocks.pop();
  chatBlocks.unshift(blocks);
  return blocks;
}

/** toChatSpan's span, as Span's fields. */
export function writeChatSpan(writer: ProtoWriter, input: ChatSpanInput<Uint8Array>): void {
  const { call } = input;
  const errorType = call.status !== "ok" ? (call.errorClass ?? "_OTHER") : null;
  const blocks = chatBlocksOf(input);
  writeIds(writer, input.place);
  writer.raw(blocks.nameAndKind);
  writer.nanos(START, call.startedAt);
  writer.nanos(END, call.startedAt + call.latencyMs);
  writer.raw(blocks.routeAttributes);
  writer.plainAttribute(ATTRIBUTES, TASK_ID, input.taskId);
  writeAttribute(writer, ATTRIBUTES, ATTEMPT, input.attempt);
  writeAttribute(writer, ATTRIBUTES, TURN, call.turn);
  writer.plainAttribute(ATTRIBUTES, CALL_ID, toCallId(input.swarmId, input.taskId, input.attempt, call.turn, call.hedge !== undefined));
  if (call.hedge !== undefined) writer.plainAttribute(ATTRIBUTES, HEDGE, call.hedge);
  if (call.usage !== null) {
    writeAttribute(writer, ATTRIBUTES, INPUT_TOKENS, call.usage.prompt_tokens);
    writeAttribute(writer, ATTRIBUTES, OUTPUT_TOKENS, call.usage.completion_tokens);
    writeAttribute(writer, ATTRIBUTES, CACHE_READ_TOKENS, call.usage.cached_tokens);
  }
  if (input.costUsd !== null) writeAttribute(writer, ATTRIBUTES, COST, input.costUsd);
  if (input.finishReason !== null) writeOneStringArray(writer, FINISH_REASONS, input.finishReason);
  if (call.ttfbMs !== undefined && call.ttfbMs !== null) writeAttribute(writer, ATTRIBUTES, TTFB, call.ttfbMs);
  if (errorType !== null) writer.plainAttribute(ATTRIBUTES, ERROR_TYPE, errorType);
  if (input.content !== null) {
    writer.plainAttribute(ATTRIBUTES, INPUT_MESSAGES, JSON.stringify(input.content.input));
    if (input.content.output !== null) {
      const output = JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: input.content.output }] }]);
      writer.plainAttribute(ATTRIBUTES, OUTPUT_MESSAGES, output);
    }
  }
  writeStatusAndFlags(writer, errorType);
}

/** A KeyValue whose value is an array of one string: AnyValue { array_value = 5 { values = 1 { string_value = 1 } } }. */
function writeOneStringArray(writer: ProtoWriter, key: Uint8Array, item: string): void {
  const keyValue = writer.beginMessage(ATTRIBUTES);
  writer.bytes(1, key);
  const anyValue = writer.beginMessage(2);
  const array = writer.beginMessage(5);
  const value = writer.beginMessage(1);
  writer.string(1, item);
  writer.endMessage(value);
  writer.endMessage(array);
  writer.endMessage(anyValue);
  writer.endMessage(keyValue);
}

/** An attempt span's first two attributes (swarm, operation), written once for the lane's swarm. */
let attemptBlock: { swarmId: string; bytes: Uint8Array } | null = null;
function attemptBlockOf(swarmId: string): Uint8Array {
  if (attemptBlock === null || attemptBlock.swarmId !== swarmId) {
    const writer = new ProtoWriter(128);
    writer.plainAttribute(ATTRIBUTES, SWARM_ID, swarmId);
    writer.raw(INVOKE_AGENT_OPERATION);
    attemptBlock = { swarmId, bytes: writer.finish() };
  }
  return attemptBlock.bytes;
}

/** toAttemptSpan's span, as Span's fields. */
export function writeAttemptSpan(writer: ProtoWriter, input: AttemptSpanInput<Uint8Array>): void {
  writeIds(writer, input.place);
  writer.string(NAME, `invoke_agent ${input.taskId}`);
  writer.uint(KIND, SPAN_KIND.internal);
  writer.nanos(START, input.startMs);
  writer.nanos(END, input.endMs);
  writer.raw(attemptBlockOf(input.swarmId));
  writer.plainAttribute(ATTRIBUTES, AGENT_NAME, input.taskId);
  writer.plainAttribute(ATTRIBUTES, AGENT_ID, `${input.swarmId}:${input.taskId}`);
  writer.plainAttribute(ATTRIBUTES, TASK_ID, input.taskId);
  writeAttribute(writer, ATTRIBUTES, ATTEMPT, input.attempt);
  writer.plainAttribute(ATTRIBUTES, OUTCOME, input.outcome);
  if (input.errorType !== null) writer.plainAttribute(ATTRIBUTES, ERROR_TYPE, input.errorType);
  if (input.previous !== null) {
    // Span.links = 13: Link { trace_id = 1, span_id = 2, attributes = 4 }
    const link = writer.beginMessage(LINKS);
    writer.bytes(1, input.previous.traceId);
    writer.bytes(2, input.previous.spanId);
    writer.raw(PREVIOUS_ATTEMPT_LINK);
    writer.endMessage(link);
  }
  writeStatusAndFlags(writer, input.errorType);
}

/** A place's ids as hex: what toChatSpan and toAttemptSpan take (the JSON protocol's path). */
export function toHexPlace(place: SpanPlace<Uint8Array>): SpanPlace {
  return { traceId: toHexId(place.traceId), spanId: toHexId(place.spanId), parentSpanId: place.parentSpanId === null ? null : toHexId(place.parentSpanId) };
}

/** A chat span's input with hex ids. */
export function toHexChatInput(input: ChatSpanInput<Uint8Array>): ChatSpanInput {
  return { ...input, place: toHexPlace(input.place) };
}

/** An attempt span's input with hex ids. */
export function toHexAttemptInput(input: AttemptSpanInput<Uint8Array>): AttemptSpanInput {
  const { previous } = input;
  return {
    ...input,
    place: toHexPlace(input.place),
    previous: previous === null ? null : { traceId: toHexId(previous.traceId), spanId: toHexId(previous.spanId) },
  };
}
