// Tool-call dialects: how each vendor's OpenAI-compatible API puts tool calls on the wire (ids,
// `index`, argument fragments), streamed and not. Pure data: no I/O, no decisions about which call.
// The engine side that must read all of them is src/core/tool-calls.ts.

export const TOOL_DIALECTS = ["openai", "kimi", "gemini", "anthropic", "args_object"] as const;
export type ToolDialect = (typeof TOOL_DIALECTS)[number];

const DIALECT_SET: ReadonlySet<string> = new Set<string>(TOOL_DIALECTS);
export const isToolDialect = (s: unknown): s is ToolDialect => typeof s === "string" && DIALECT_SET.has(s);

/** The dialect a model name implies: `kimi-*`, `gemini-*`, `claude-*` (after any `vendor/`), else openai. */
export function defaultToolDialect(model: string): ToolDialect {
  const name = model.slice(model.lastIndexOf("/") + 1).toLowerCase();
  if (name.startsWith("kimi-")) return "kimi";
  if (name.startsWith("gemini-")) return "gemini";
  if (name.startsWith("claude-")) return "anthropic";
  return "openai";
}

/** A tool call as decided, before the dialect shapes it. `arguments` is always JSON text (maybe cut at max_tokens). */
export interface PlannedCall {
  name: string;
  arguments: string;
}

/** A tool call with its dialect id, as it goes into `message.tool_calls`. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/**
 * The call ids a dialect issues. openai / anthropic / args_object: `call_<hash16>` (hash of the
 * request and the call's position); kimi: `functions.<name>:<i>` where i counts every tool call of
 * the conversation (Moonshot's format, which clients must echo back exactly); gemini: "" (the
 * client makes up its own ids).
 */
export function toolCallId(dialect: ToolDialect, name: string, runningIndex: number, hash16: string): string {
  switch (dialect) {
    case "kimi":
      return `functions.${name}:${runningIndex}`;
    case "gemini":
      return "";
    case "openai":
    case "anthropic":
    case "args_object":
      return `call_${hash16}`;
  }
}

/** `arguments` as an object for the args_object dialect; text that is not a JSON object (cut at max_tokens) stays text. */
function argumentsObject(text: string): unknown {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : text;
  } catch {
    return text;
  }
}

/** `message.tool_calls` of a non-streaming answer. */
export function wireToolCalls(dialect: ToolDialect, calls: readonly ToolCall[]): Array<Record<string, unknown>> {
  return calls.map((c) => ({
    id: c.id,
    type: "function",
    function: { name: c.function.name, arguments: dialect === "args_object" ? argumentsObject(c.function.arguments) : c.function.arguments },
  }));
}

/** Cuts `text` into `n` non-empty pieces of about equal length (fewer if the text is shorter). */
function fragments(text: string, n: number): string[] {
  const count = Math.max(1, Math.min(n, text.length));
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(text.slice(Math.floor((i * text.length) / count), Math.floor(((i + 1) * text.length) / count)));
  return out;
}

/**
 * The `delta.tool_calls` array of each streamed chunk, in order (one array per chunk).
 * - openai / kimi: per call a header `{index, id, type, function: {name, arguments: ""}}`, then the
 *   arguments in 2 fragments (3 from 24 chars on) `{index, function: {arguments}}`; index from 0.
 * - anthropic: the same with indexes from 1 (as Anthropic's OpenAI-compatible endpoint numbers its blocks).
 * - gemini: no `index`, id "", each call whole in one delta.
 * - args_object: `{index, id, type, function: {name, arguments: {…}}}`, the arguments an object, one delta per call.
 */
export function streamToolCallDeltas(dialect: ToolDialect, calls: readonly ToolCall[]): Array<Array<Record<string, unknown>>> {
  const out: Array<Array<Record<string, unknown>>> = [];
  calls.forEach((c, i) => {
    const name = c.function.name;
    const args = c.function.arguments;
    switch (dialect) {
      case "gemini":
        out.push([{ id: "", type: "function", function: { name, arguments: args } }]);
        return;
      case "args_object":
        out.push([{ index: i, id: c.id, type: "function", function: { name, arguments: argumentsObject(args) } }]);
        return;
      case "openai":
      case "kimi":
      case "anthropic": {
        const index = dialect === "anthropic" ? i + 1 : i;
        out.push([{ index, id: c.id, type: "function", function: { name, arguments: "" } }]);
        for (const piece of fragments(args, args.length >= 24 ? 3 : 2)) out.push([{ index, function: { arguments: piece } }]);
        return;
      }
    }
  });
  return out;
}
