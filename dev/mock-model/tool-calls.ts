// Which tools the mock calls in a tool turn, and with what arguments. Deterministic, no I/O.

import { collapse, firstUrl } from "./conversation.ts";
import type { Conversation } from "./conversation.ts";
import type { ToolDef } from "./openai.ts";
import { valueForSchema } from "./schema.ts";
import { sha256hex, words } from "./text.ts";
import type { PlannedCall } from "./tool-dialect.ts";

/** Upper bound of `[mock:parallel=K]`. */
export const MAX_PARALLEL = 16;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Offered tools whose names occur (as whole words) in `text`, in order of first occurrence. */
export function mentionedTools(tools: readonly ToolDef[], text: string): ToolDef[] {
  const found: Array<[number, ToolDef]> = [];
  for (const t of tools) {
    if (t.name === "") continue;
    const m = new RegExp(`(?<![A-Za-z0-9_])${escapeRe(t.name)}(?![A-Za-z0-9_])`).exec(text);
    if (m !== null && !found.some(([, f]) => f.name === t.name)) found.push([m.index, t]);
  }
  return found.sort((a, b) => a[0] - b[0]).map(([, t]) => t);
}

/**
 * The K calls of one tool turn: the tools named in the last user message (in order of mention),
 * else the first offered tool, taken round-robin from where earlier turns stopped (so "scratchpad_put
 * then scratchpad_get" over two turns calls put, then get).
 */
export function planToolCalls(tools: readonly ToolDef[], conv: Conversation, parallel: number): PlannedCall[] {
  const mentioned = mentionedTools(tools, conv.lastUser);
  const candidates = mentioned.length > 0 ? mentioned : tools.slice(0, 1);
  const k = Math.max(1, Math.min(MAX_PARALLEL, parallel));
  const out: PlannedCall[] = [];
  for (let i = 0; i < k && candidates.length > 0; i++) {
    const tool = candidates[(conv.earlierCalls.length + i) % candidates.length];
    if (tool !== undefined) out.push({ name: tool.name, arguments: JSON.stringify(toolArguments(tool, conv)) });
  }
  return out;
}

/** The scratchpad key of a task: derived from its prompt, so put and get in one conversation agree. */
export const scratchpadKey = (conv: Conversation): string => `note-${sha256hex(conv.users[0] ?? "").slice(0, 8)}`;

/**
 * Arguments from the tool's parameters schema, except for the tools the examples use:
 * `http_fetch` gets `url` = the first http(s) URL of the user messages (else https://example.com/);
 * `scratchpad_put` gets `{key, value}`, `scratchpad_get` `{key}`. For these three, other required
 * properties are still generated from the schema; optional ones are left out (a generated
 * `max_bytes: 1` or `timeout: 0` would only get in the way).
 */
export function toolArguments(tool: ToolDef, conv: Conversation): unknown {
  const tag = sha256hex(conv.lastUser).slice(0, 8);
  let fixed: Record<string, string> | undefined;
  switch (tool.name) {
    case "http_fetch":
      fixed = { url: firstUrl(conv.users.join("\n")) ?? "https://example.com/" };
      break;
    case "scratchpad_put":
      fixed = { key: scratchpadKey(conv), value: `[mock] note ${tag}: ${words(sha256hex(`note:${conv.lastUser}`), 5)}` };
      break;
    case "scratchpad_get":
      fixed = { key: scratchpadKey(conv) };
      break;
    default:
      return valueForSchema(tool.parameters, tag);
  }
  return { ...requiredOnly(tool.parameters, tag, Object.keys(fixed)), ...fixed };
}

/** Values for the schema's required properties other than `skip`. */
function requiredOnly(schema: unknown, tag: string, skip: readonly string[]): Record<string, unknown> {
  if (!isObj(schema) || !Array.isArray(schema.required) || !isObj(schema.properties)) return {};
  const props: Record<string, unknown> = {};
  for (const r of schema.required) if (typeof r === "string" && !skip.includes(r)) props[r] = schema.properties[r] ?? {};
  if (Object.keys(props).length === 0) return {};
  const v = valueForSchema({ ...schema, properties: props, required: Object.keys(props), additionalProperties: false }, tag);
  return isObj(v) ? v : {};
}

/**
 * The text answer after the tool turns: names the tools called and quotes the last tool result.
 * `[mock] answer using <names>: <first 120 chars of the last tool message, whitespace collapsed>`.
 */
export function answerUsingTools(conv: Conversation): string {
  const names = [...new Set(conv.earlierCalls.map((c) => c.name).filter((n) => n !== ""))];
  return `[mock] answer using ${names.length > 0 ? names.join(", ") : "tools"}: ${collapse(conv.lastToolResult ?? "").slice(0, 120)}`;
}
