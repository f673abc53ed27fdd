// The built-in scratchpad tools (scratchpad_get / scratchpad_put / scratchpad_list): their
// definitions as the model sees them, their argument parsing and the scratchpad's limits. No I/O.
// The scratchpad is one key/value map per swarm, stored in its SwarmRoom and shared by its agents.
import { z } from "zod";
import type { ScratchpadRequest } from "./swarm-contract.ts";

export const SCRATCHPAD_LIMITS = {
  keyChars: 200,
  valueChars: 65_536,
  keys: 10_000,
  /** Keys returned by one list call. */
  listPage: 200,
} as const;

export const SCRATCHPAD_TOOLS = [
  {
    type: "function",
    function: {
      name: "scratchpad_get",
      description: "Read a value from the scratchpad shared by all agents of this swarm. Returns null when the key is not set.",
      parameters: { type: "object", properties: { key: { type: "string", description: "The key to read." } }, required: ["key"], additionalProperties: false },
    },
  },
  {
    type: "function",
    function: {
      name: "scratchpad_put",
      description: `Write a value to the scratchpad shared by all agents of this swarm (replaces the key's value; at most ${SCRATCHPAD_LIMITS.valueChars} characters).`,
      parameters: {
        type: "object",
        properties: { key: { type: "string", description: "The key to write." }, value: { type: "string", description: "The text to store." } },
        required: ["key", "value"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "scratchpad_list",
      description: "List the keys of the shared scratchpad that start with a prefix (all keys when the prefix is empty).",
      parameters: { type: "object", properties: { prefix: { type: "string", description: "Only keys starting with this." } }, additionalProperties: false },
    },
  },
] as const;

const Key = z.string().min(1, "key must not be empty").max(SCRATCHPAD_LIMITS.keyChars, `key is longer than ${SCRATCHPAD_LIMITS.keyChars} characters`);

export function isScratchpadTool(name: string): boolean {
  return name === "scratchpad_get" || name === "scratchpad_put" || name === "scratchpad_list";
}

/** The SwarmRoom request for a scratchpad tool call, or why its arguments are unusable. */
export function toScratchpadRequest(
  name: string,
  args: Record<string, unknown>,
  taskId: string,
): { ok: true; request: ScratchpadRequest } | { ok: false; error: string } {
  const problem = (error: z.ZodError): { ok: false; error: string } => ({
    ok: false,
    error: `${name}: ${error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ")}`,
  });
  switch (name) {
    case "scratchpad_get": {
      const parsed = z.object({ key: Key }).safeParse(args);
      return parsed.success ? { ok: true, request: { op: "get", key: parsed.data.key } } : problem(parsed.error);
    }
    case "scratchpad_put": {
      const parsed = z
        .object({ key: Key, value: z.string().max(SCRATCHPAD_LIMITS.valueChars, `value is longer than ${SCRATCHPAD_LIMITS.valueChars} characters`) })
        .safeParse(args);
      return parsed.success ? { ok: true, request: { op: "put", key: parsed.data.key, value: parsed.data.value, taskId } } : problem(parsed.error);
    }
    case "scratchpad_list": {
      const parsed = z.object({ prefix: z.string().max(SCRATCHPAD_LIMITS.keyChars).default("") }).safeParse(args);
      return parsed.success ? { ok: true, request: { op: "list", prefix: parsed.data.prefix } } : problem(parsed.error);
    }
    default:
      return { ok: false, error: `${name} is not a scratchpad tool` };
  }
}
