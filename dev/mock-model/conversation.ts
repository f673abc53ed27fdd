// Reads a validated conversation for what the answer depends on: the user's text, `[mock:…]`
// directives, earlier tool calls and tool results, and the edgeswarm role markers. No I/O.

import { contentText } from "./text.ts";
import type { PromptMessage } from "./text.ts";

export const PLANNER_MARKER = "[edgeswarm:planner]";
export const REDUCER_MARKER = "[edgeswarm:reducer]";
export const REPAIR_MARKER = "[edgeswarm:repair]";

/** What the system prompt says the request is for. */
export type Role = "planner" | "reducer" | undefined;

export interface Conversation {
  /** Text of the last user message ("" if none). */
  lastUser: string;
  /** Texts of every user message, in order. */
  users: string[];
  /** Every message's text joined (where `[mock:…]` directives are looked for). */
  all: string;
  /** Assistant messages with a non-empty `tool_calls` (= tool turns done). */
  toolTurns: number;
  /** Ids and names of every earlier tool call, in order. */
  earlierCalls: Array<{ id: string; name: string }>;
  /** Content of the last `tool` message, or undefined when there is none. */
  lastToolResult: string | undefined;
  role: Role;
  /** The last user message starts with [edgeswarm:repair]. */
  repair: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function readConversation(messages: readonly PromptMessage[]): Conversation {
  const users: string[] = [];
  const texts: string[] = [];
  const earlierCalls: Array<{ id: string; name: string }> = [];
  let toolTurns = 0;
  let lastToolResult: string | undefined;
  let system: string | undefined;
  for (const m of messages) {
    const text = contentText(m.content);
    texts.push(text);
    if (m.role === "user") users.push(text);
    else if ((m.role === "system" || m.role === "developer") && system === undefined) system = text;
    else if (m.role === "tool") lastToolResult = text;
    else if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      toolTurns++;
      for (const c of m.tool_calls) {
        const fn = isObj(c) && isObj(c.function) ? c.function : undefined;
        earlierCalls.push({ id: isObj(c) && typeof c.id === "string" ? c.id : "", name: typeof fn?.name === "string" ? fn.name : "" });
      }
    }
  }
  const firstLine = (system ?? "").trimStart().split("\n", 1)[0] ?? "";
  const role: Role = firstLine.startsWith(PLANNER_MARKER) ? "planner" : firstLine.startsWith(REDUCER_MARKER) ? "reducer" : undefined;
  const lastUser = users.at(-1) ?? "";
  return { lastUser, users, all: texts.join("\n"), toolTurns, earlierCalls, lastToolResult, role, repair: lastUser.trimStart().startsWith(REPAIR_MARKER) };
}

/** The value of the first `[mock:NAME=N]` directive (a non-negative integer), or undefined. */
export function directive(text: string, name: string): number | undefined {
  const m = new RegExp(`\\[mock:${name}=(\\d{1,6})\\]`).exec(text);
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

const URL_RE = /https?:\/\/[^\s"'<>`)\]}]+/;

/** The first http(s) URL in `text` (trailing sentence punctuation dropped), or undefined. */
export function firstUrl(text: string): string | undefined {
  const m = URL_RE.exec(text);
  return m === null ? undefined : m[0].replace(/[.,;:!?]+$/, "");
}

/** Whitespace runs collapsed to one space, trimmed. */
export const collapse = (s: string): string => s.replace(/\s+/g, " ").trim();
