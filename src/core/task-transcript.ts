// A task's transcript as GET /v1/swarms/:id/tasks/:task_id shows it, and the bounds on what the
// SwarmRoom keeps of a conversation (docs/data.md `transcripts`). No I/O.
import { z } from "zod";
import type { ChatMessage } from "./agent-conversation.ts";
import type { ErrorClass } from "./error-class.ts";
import type { TaskState } from "./swarm-contract.ts";

/** Per message kept: longer content is cut here, marked. */
export const TRANSCRIPT_MESSAGE_CHARS = 4_000;
/** Messages kept per task: the first two (system, user) and the most recent ones. */
export const TRANSCRIPT_MAX_MESSAGES = 40;

export interface TranscriptCall {
  call_id: string;
  attempt: number;
  turn: number;
  model: string;
  status: string;
  error_class: string | null;
  usage: {
    prompt_tokens: number | null;
    cached_tokens: number | null;
    completion_tokens: number | null;
    reasoning_tokens: number | null;
    total_tokens: number | null;
  };
  cost_usd: number | null;
  latency_ms: number;
  started_at: string;
  /** Known for the call that gave a succeeded task its output (the task's finish reason); null otherwise. */
  finish_reason: string | null;
  /** A backup call (limits.hedge): `won` when its answer was kept; null for a turn's first call. */
  hedge: "won" | "lost" | null;
}

/** MCP calls kept per task (the most recent ones). */
export const TRANSCRIPT_MAX_MCP_CALLS = 64;

/**
 * One MCP call of a task: which server and tool, how long, how many bytes the model got, and what
 * went wrong (null: nothing). Never its arguments or answer (those are in `messages`).
 */
export const TranscriptMcpCallSchema = z.object({
  tool_call_id: z.string(),
  attempt: z.number().int(),
  turn: z.number().int(),
  server: z.string(),
  tool: z.string(),
  latency_ms: z.number(),
  bytes: z.number().int(),
  error: z.string().nullable(),
});
export type TranscriptMcpCall = z.infer<typeof TranscriptMcpCallSchema>;

/** Appends `added` to `kept`, keeping the most recent TRANSCRIPT_MAX_MCP_CALLS. */
export function appendMcpCalls(kept: readonly TranscriptMcpCall[], added: readonly TranscriptMcpCall[]): TranscriptMcpCall[] {
  return [...kept, ...added].slice(-TRANSCRIPT_MAX_MCP_CALLS);
}

export interface TaskTranscript {
  swarm_id: string;
  task_id: string;
  state: TaskState;
  attempts: number;
  model: string | null;
  prompt: string;
  output: string | null;
  finish_reason: string | null;
  error: { class: ErrorClass; message: string } | null;
  tool_calls: number;
  started_at: string | null;
  finished_at: string | null;
  usage: { calls: number; total_tokens: number };
  cost_usd: number;
  calls: TranscriptCall[];
  /** The task's MCP calls, oldest first (the latest attempt's conversation, and those it resumed from). */
  mcp_calls: TranscriptMcpCall[];
  messages: ChatMessage[];
  /** Messages left out or cut to the bounds above. */
  messages_truncated: boolean;
}

const cut = (text: string): { text: string; cut: boolean } =>
  text.length <= TRANSCRIPT_MESSAGE_CHARS
    ? { text, cut: false }
    : { text: `${text.slice(0, TRANSCRIPT_MESSAGE_CHARS)}… [${text.length - TRANSCRIPT_MESSAGE_CHARS} more characters not kept]`, cut: true };

/** Cuts a conversation to the transcript bounds: each message's text, and the middle of a long loop. */
export function boundMessages(messages: readonly ChatMessage[]): { messages: ChatMessage[]; truncated: boolean } {
  let truncated = false;
  let kept = [...messages];
  if (kept.length > TRANSCRIPT_MAX_MESSAGES) {
    kept = [...kept.slice(0, 2), ...kept.slice(kept.length - (TRANSCRIPT_MAX_MESSAGES - 2))];
    truncated = true;
  }
  const bounded = kept.map((message): ChatMessage => {
    if (message.content === null) return message;
    const c = cut(message.content);
    truncated ||= c.cut;
    return { ...message, content: c.text };
  });
  return { messages: bounded, truncated };
}

/**
 * The messages of a task: the kept conversation (multi-turn agents checkpoint it each turn), else
 * the system prompt and the task's prompt; then the final answer when the kept part does not end with it.
 */
export function toTranscriptMessages(input: { system: string | null; prompt: string; kept: ChatMessage[] | null; output: string | null }): {
  messages: ChatMessage[];
  truncated: boolean;
} {
  const base: ChatMessage[] = input.kept ?? [
    ...(input.system === null ? [] : [{ role: "system" as const, content: input.system }]),
    { role: "user" as const, content: input.prompt },
  ];
  const last = base.at(-1);
  const withAnswer =
    input.output !== null && !(last?.role === "assistant" && last.content === input.output)
      ? [...base, { role: "assistant" as const, content: input.output }]
      : base;
  return boundMessages(withAnswer);
}
