// Tool-call normalization: turns the tool-call deltas of a streamed chat completion, in any
// vendor's dialect, into complete calls with parsed arguments. No I/O.
// Dialects: OpenAI (index per call, id and name first, arguments as string fragments); Kimi (ids
// like `functions.name:0` that must be echoed back exactly); Gemini (no `index`, empty ids, a whole
// call per delta); Anthropic-compatible (indexes start at 1); arguments sent as an object; broken JSON.
import { z } from "zod";
import { toErrorMessage } from "./error-message.ts";

const DeltaSchema = z.looseObject({
  index: z.number().int().nonnegative().optional(),
  id: z.string().nullable().optional(),
  type: z.string().nullable().optional(),
  function: z
    .looseObject({
      name: z.string().nullable().optional(),
      arguments: z
        .union([z.string(), z.record(z.string(), z.unknown())])
        .nullable()
        .optional(),
    })
    .optional(),
});

export interface ToolCall {
  /** As the model sent it (echo it back exactly); generated as `call_<n>` when the model sent none. */
  id: string;
  name: string;
  /** The arguments text as received (objects are serialized). */
  rawArguments: string;
  /** Parsed arguments, or why they could not be parsed (sent back to the model as a tool error). */
  arguments: { ok: true; value: Record<string, unknown> } | { ok: false; error: string };
}

interface Building {
  id: string;
  name: string;
  args: string;
}

/**
 * Accumulates the `choices[0].delta.tool_calls` arrays of a stream, in order. A delta that is not
 * a tool-call shape at all is ignored rather than trusted.
 */
export function accumulateToolCalls(deltaArrays: readonly unknown[]): ToolCall[] {
  const calls: Building[] = [];
  // Vendors disagree on where indexes start (0 or 1) or send none: map them by first appearance.
  const byIndex = new Map<number, Building>();
  for (const array of deltaArrays) {
    if (!Array.isArray(array)) continue;
    for (const raw of array) {
      const parsed = DeltaSchema.safeParse(raw);
      if (!parsed.success) continue;
      const delta = parsed.data;
      const name = delta.function?.name ?? "";
      const args = delta.function?.arguments;
      const argsText = args === null || args === undefined ? "" : typeof args === "string" ? args : JSON.stringify(args);
      let call: Building | undefined;
      if (delta.index !== undefined) {
        call = byIndex.get(delta.index);
        if (call === undefined) {
          call = { id: delta.id ?? "", name, args: "" };
          byIndex.set(delta.index, call);
          calls.push(call);
        }
      } else if (name !== "" || calls.length === 0) {
        // No index (Gemini): a delta with a name is a new call; one without continues the last.
        call = { id: delta.id ?? "", name, args: "" };
        calls.push(call);
      } else {
        call = calls[calls.length - 1];
      }
      if (call === undefined) continue;
      if (call.id === "" && delta.id) call.id = delta.id;
      if (call.name === "" && name !== "") call.name = name;
      call.args += argsText;
    }
  }
  return calls.map((call, i) => ({
    id: call.id === "" ? `call_${i}` : call.id,
    name: call.name,
    rawArguments: call.args,
    arguments: parseArguments(call.args),
  }));
}

/** A tool call as the conversation stores it (an assistant message's `tool_calls` entry), parsed again. */
export function toToolCall(id: string, name: string, rawArguments: string): ToolCall {
  return { id, name, rawArguments, arguments: parseArguments(rawArguments) };
}

function parseArguments(text: string): ToolCall["arguments"] {
  if (text.trim() === "") return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `the arguments are not valid JSON (${toErrorMessage(error)}): ${text.slice(0, 200)}` };
  }
  const object = z.record(z.string(), z.unknown()).safeParse(value);
  return object.success
    ? { ok: true, value: object.data }
    : { ok: false, error: `the arguments must be a JSON object, got ${JSON.stringify(value).slice(0, 200)}` };
}
