// One sub-agent's conversation: the chat messages of its loop (model call → tool calls → tool
// results → model call …), the limits that end it, and its checkpoint form. No I/O.
// The shapes are OpenAI chat-completions messages, which every OpenAI-compatible upstream takes.
import { z } from "zod";
import { estimatePromptTokens } from "./estimate-swarm.ts";
import type { AgentCheckpoint } from "./swarm-contract.ts";
import { MAX_TOOL_RESULT_CHARS } from "./agent-limits.ts";
import type { Limits } from "./spec-schema.ts";
import { toToolCall, type ToolCall } from "./tool-calls.ts";
import { TranscriptMcpCallSchema, type TranscriptMcpCall } from "./task-transcript.ts";

export const ChatMessageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content: z.string() }),
  z.object({ role: z.literal("user"), content: z.string() }),
  z.object({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    tool_calls: z.array(z.object({ id: z.string(), type: z.literal("function"), function: z.object({ name: z.string(), arguments: z.string() }) })).optional(),
  }),
  z.object({ role: z.literal("tool"), tool_call_id: z.string(), content: z.string() }),
]);
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

export interface AgentState {
  messages: ChatMessage[];
  /** Model calls finished. */
  turns: number;
  toolCalls: number;
  /** Repair turns used (structured output): at most one. */
  repairs: number;
  /** The task's MCP calls so far, for its transcript (absent: none). */
  mcpCalls?: TranscriptMcpCall[];
  /**
   * The last turn's answer, once its call has ended with no tools to run: what the task's outcome
   * is made from. Checkpointed with that call, so an attempt that dies before its outcome reaches
   * the room is finished by the next from this answer, without calling the model again.
   */
  answer?: FinalAnswer;
}

/** A turn's answer with no tools to run (AgentState.answer). */
export interface FinalAnswer {
  text: string;
  finishReason: string | null;
  /** The model asked only for tools it was not offered, and gave no text. */
  toolCallsOnly: boolean;
}

const FinalAnswerSchema = z.object({ text: z.string(), finishReason: z.string().nullable(), toolCallsOnly: z.boolean() });

export function startConversation(system: string | null, prompt: string): AgentState {
  const messages: ChatMessage[] = [];
  if (system !== null) messages.push({ role: "system", content: system });
  messages.push({ role: "user", content: prompt });
  return { messages, turns: 0, toolCalls: 0, repairs: 0 };
}

export function toCheckpoint(state: AgentState): AgentCheckpoint {
  const mcpCalls = state.mcpCalls ?? [];
  return {
    step: state.messages.length,
    turns: state.turns,
    toolCalls: state.toolCalls,
    repairs: state.repairs,
    messages_json: JSON.stringify(state.messages),
    ...(mcpCalls.length === 0 ? {} : { mcp_calls_json: JSON.stringify(mcpCalls) }),
    ...(state.answer === undefined ? {} : { answer_json: JSON.stringify(state.answer) }),
  };
}

/** The MCP calls a checkpoint carries; none when absent or unreadable (they only feed the transcript). */
export function toCheckpointMcpCalls(checkpoint: AgentCheckpoint): TranscriptMcpCall[] {
  if (checkpoint.mcp_calls_json === undefined) return [];
  try {
    const parsed = TranscriptMcpCallSchema.array().safeParse(JSON.parse(checkpoint.mcp_calls_json));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/** The state a checkpoint holds, or null when it cannot be read (the task then starts over). */
export function fromCheckpoint(checkpoint: AgentCheckpoint): AgentState | null {
  let raw: unknown;
  try {
    raw = JSON.parse(checkpoint.messages_json);
  } catch {
    return null;
  }
  const messages = z.array(ChatMessageSchema).min(1).safeParse(raw);
  if (!messages.success) return null;
  const mcpCalls = toCheckpointMcpCalls(checkpoint);
  const answer = toCheckpointAnswer(checkpoint);
  if (answer === null) return null;
  return {
    messages: messages.data,
    turns: checkpoint.turns,
    toolCalls: checkpoint.toolCalls,
    repairs: checkpoint.repairs,
    ...(mcpCalls.length === 0 ? {} : { mcpCalls }),
    ...(answer === undefined ? {} : { answer }),
  };
}

/**
 * Whether a checkpoint holds nothing but a first turn's answer: no tool ran, no repair, no MCP
 * call. Its conversation is the task's prompt, so nothing but a retry needs it (a multi-turn
 * task's checkpoints also make the room's transcript of it).
 */
export function holdsOnlyFirstAnswer(checkpoint: AgentCheckpoint): boolean {
  return (
    checkpoint.answer_json !== undefined &&
    checkpoint.turns <= 1 &&
    checkpoint.toolCalls === 0 &&
    checkpoint.repairs === 0 &&
    checkpoint.mcp_calls_json === undefined
  );
}

/** The answer a checkpoint carries: undefined when it has none, null when it cannot be read. */
function toCheckpointAnswer(checkpoint: AgentCheckpoint): FinalAnswer | undefined | null {
  if (checkpoint.answer_json === undefined) return undefined;
  try {
    const parsed = FinalAnswerSchema.safeParse(JSON.parse(checkpoint.answer_json));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * What the next model call may do. Tools are offered while turns and tool calls are left; the last
 * turn (or once max_tool_calls is used) is asked for the final answer without tools.
 */
export function nextTurn(
  state: AgentState,
  limits: Pick<Limits, "max_turns" | "max_tool_calls">,
  hasTools: boolean,
): { turn: number; offerTools: boolean } | null {
  // One repair turn may follow max_turns: it answers for the structured output, not for the tools.
  const allowed = limits.max_turns + state.repairs;
  if (state.turns >= allowed) return null;
  const turn = state.turns + 1;
  const offerTools = hasTools && turn < allowed && state.toolCalls < limits.max_tool_calls && state.repairs === 0;
  return { turn, offerTools };
}

/**
 * Tool-call ids are unique within a conversation. A vendor that sends no ids (Gemini) gets
 * `call_<n>` per turn from the normalizer, so a later turn would repeat them: a call whose id is
 * already taken is renamed `call_<turn>_<n>` (ids the model did send are echoed as they are).
 */
export function withUniqueCallIds(calls: readonly ToolCall[], messages: readonly ChatMessage[], turn: number): ToolCall[] {
  const taken = new Set(messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : [])));
  return calls.map((call, i) => {
    let id = call.id;
    // A model may itself send ids shaped like ours: step past every id already taken.
    for (let n = 0; taken.has(id); n += 1) id = n === 0 ? `call_${turn}_${i}` : `call_${turn}_${i}_${n}`;
    taken.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

/**
 * Tool calls the last assistant message asked for whose results are not in the conversation yet:
 * a turn checkpointed between its model call and its tools (the consumer died meanwhile). The
 * resumed task runs them (with the same ids) instead of paying for the model call again.
 */
export function pendingToolCalls(messages: readonly ChatMessage[]): ToolCall[] {
  const last = messages[messages.length - 1];
  if (last?.role !== "assistant" || last.tool_calls === undefined || last.tool_calls.length === 0) return [];
  return last.tool_calls.map((call) => toToolCall(call.id, call.function.name, call.function.arguments));
}

/** The assistant message that asked for tool calls, echoing every id exactly as the model sent it. */
export function toAssistantToolMessage(text: string, calls: readonly ToolCall[]): ChatMessage {
  return {
    role: "assistant",
    content: text === "" ? null : text,
    tool_calls: calls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.rawArguments === "" ? "{}" : call.rawArguments },
    })),
  };
}

export function toToolMessage(callId: string, content: string): ChatMessage {
  const cut =
    content.length > MAX_TOOL_RESULT_CHARS ? `${content.slice(0, MAX_TOOL_RESULT_CHARS)}\n[cut: the result had ${content.length} characters]` : content;
  return { role: "tool", tool_call_id: callId, content: cut };
}

/** A tool failure as the model sees it: JSON, so it can tell an error from a result. */
export function toToolError(message: string): string {
  return JSON.stringify({ error: message });
}

/**
 * Splits a turn's tool calls into those to run and those refused because max_tool_calls would be
 * passed (each refused call still gets an answer: every tool_call id needs a tool message).
 */
export function admitToolCalls<T>(calls: readonly T[], used: number, max: number): { run: T[]; refused: T[] } {
  const room = Math.max(0, max - used);
  return { run: calls.slice(0, room), refused: calls.slice(room) };
}

/**
 * Prompt tokens of a call, estimated as estimatePromptTokens counts one message (ceil(chars / 4)
 * + framing) for every message, its tool calls, and the tool definitions offered.
 */
export function estimateConversationTokens(messages: readonly ChatMessage[], tools: readonly unknown[] | null): number {
  let tokens = tools === null || tools.length === 0 ? 0 : Math.ceil(JSON.stringify(tools).length / 4);
  for (const m of messages) {
    tokens += estimatePromptTokens(null, m.content ?? "");
    if (m.role === "assistant" && m.tool_calls !== undefined) tokens += Math.ceil(JSON.stringify(m.tool_calls).length / 4);
  }
  return tokens;
}
