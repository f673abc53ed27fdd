// The reducers that merge a swarm's results into one answer by code: collect, concat, json_merge,
// vote; and the spec and output shape of `llm`, whose merging runs as queued reducer tasks
// (llm-reduction.ts builds their prompts). Inputs are the succeeded outputs in task order. No I/O.
import { z } from "zod";
import type { ReductionLevel } from "./llm-reduction.ts";

export const ReduceSpecSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("collect") }),
  z.strictObject({
    kind: z.literal("concat"),
    /** Per result; `{task_id}`, `{output}` and `{index}` (1-based) are replaced. */
    template: z.string().min(1).max(10_000).default("## {task_id}\n\n{output}"),
    separator: z.string().max(1_000).default("\n\n"),
  }),
  z.strictObject({ kind: z.literal("json_merge") }),
  z.strictObject({
    kind: z.literal("vote"),
    /** How answers are compared: exact text, or trimmed and lower-cased without trailing punctuation. */
    normalize: z.enum(["exact", "loose"]).default("loose"),
  }),
  z.strictObject({
    kind: z.literal("llm"),
    /** The reducer's model (default: the swarm's model; the first of a mix). */
    model: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[\w.\-/:@]+$/, "model name has characters a model id never has")
      .optional(),
    instructions: z.string().min(1).max(10_000).optional(),
    /**
     * The reducer model's context window in tokens (default: the gateway's `context` for the model,
     * else 32,000). Results that do not fit in one call are reduced hierarchically.
     */
    context_tokens: z.number().int().min(2_000).max(10_000_000).optional(),
    max_output_tokens: z.number().int().min(16).max(128_000).default(2_048),
  }),
]);
export type ReduceSpec = z.infer<typeof ReduceSpecSchema>;
/** The reducers that run by code, inside the SwarmRoom. */
export type CodeReduceSpec = Exclude<ReduceSpec, { kind: "llm" }>;
export type LlmReduceSpec = Extract<ReduceSpec, { kind: "llm" }>;

export interface TaskOutput {
  task_id: string;
  output: string;
}

/** The reduced answer is inline up to this size; `truncated` says when it was cut. */
export const MAX_REDUCED_CHARS = 1_000_000;

export type ReducedOutput =
  | { kind: "collect"; results: TaskOutput[]; truncated: boolean }
  | { kind: "concat"; text: string; truncated: boolean }
  | { kind: "json_merge"; value: Json; conflicts: JsonConflict[]; invalid: string[] }
  | { kind: "vote"; winner: string | null; votes: number; total: number; tie: boolean; counts: { answer: string; votes: number }[] }
  | LlmReducedOutput;

/** What the reducer model answered, and how the answer was made. */
export interface LlmReducedOutput {
  kind: "llm";
  /** null when the final reduction failed (see the swarm's reason). */
  text: string | null;
  model: string;
  /** The reducer's context window the chunks were cut to. */
  context_tokens: number;
  /** Level 1 reduces the results, level 2 the outputs of level 1, …; the last level has one task. */
  levels: ReductionLevel[];
  /** Results the reduction used, and results too long for one chunk that were cut. */
  inputs: number;
  truncated: string[];
}

export interface JsonConflict {
  /** Dotted path of the value the results disagree on. */
  path: string;
  values: { task_id: string; value: Json }[];
}

export function reduceOutputs(spec: CodeReduceSpec, outputs: readonly TaskOutput[]): ReducedOutput {
  switch (spec.kind) {
    case "collect":
      return collect(outputs);
    case "concat":
      return concat(outputs, spec.template, spec.separator);
    case "json_merge":
      return jsonMerge(outputs);
    case "vote":
      return vote(outputs, spec.normalize);
  }
}

function collect(outputs: readonly TaskOutput[]): ReducedOutput {
  const results: TaskOutput[] = [];
  let chars = 0;
  for (const o of outputs) {
    chars += o.output.length + o.task_id.length;
    if (chars > MAX_REDUCED_CHARS) return { kind: "collect", results, truncated: true };
    results.push(o);
  }
  return { kind: "collect", results, truncated: false };
}

function concat(outputs: readonly TaskOutput[], template: string, separator: string): ReducedOutput {
  const parts: string[] = [];
  let chars = 0;
  for (const [i, o] of outputs.entries()) {
    // One pass over the template, so an output that contains "{task_id}" is not expanded again.
    const part = template.replace(/\{(task_id|output|index)\}/g, (_m, key: string) =>
      key === "task_id" ? o.task_id : key === "output" ? o.output : String(i + 1),
    );
    chars += part.length + separator.length;
    if (chars > MAX_REDUCED_CHARS) return { kind: "concat", text: parts.join(separator), truncated: true };
    parts.push(part);
  }
  return { kind: "concat", text: parts.join(separator), truncated: false };
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
const JsonSchema: z.ZodType<Json> = z.lazy(() =>
  z.union([z.null(), z.boolean(), z.number(), z.string(), z.array(JsonSchema), z.record(z.string(), JsonSchema)]),
);

function parseJson(text: string): Json | undefined {
  try {
    const parsed = JsonSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

const isObject = (v: Json | undefined): v is { [key: string]: Json } => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Arrays are concatenated in task order, objects merged key by key (deeply); where results give
 * different scalars (or different kinds) at one path, the first kept and every value listed.
 */
function jsonMerge(outputs: readonly TaskOutput[]): ReducedOutput {
  const invalid: string[] = [];
  const conflicts = new Map<string, JsonConflict>();
  let merged: Json | undefined;
  let firstId = "";
  for (const o of outputs) {
    const value = parseJson(o.output);
    if (value === undefined) {
      invalid.push(o.task_id);
      continue;
    }
    if (merged === undefined) {
      merged = value;
      firstId = o.task_id;
      continue;
    }
    merged = mergeValues(merged, value, "", firstId, o.task_id, conflicts);
  }
  return { kind: "json_merge", value: merged ?? null, conflicts: [...conflicts.values()], invalid };
}

function mergeValues(a: Json, b: Json, path: string, firstId: string, taskId: string, conflicts: Map<string, JsonConflict>): Json {
  if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
  if (isObject(a) && isObject(b)) {
    const out: { [key: string]: Json } = { ...a };
    for (const [key, value] of Object.entries(b)) {
      const existing = out[key];
      out[key] = existing === undefined ? value : mergeValues(existing, value, path === "" ? key : `${path}.${key}`, firstId, taskId, conflicts);
    }
    return out;
  }
  if (JSON.stringify(a) === JSON.stringify(b)) return a;
  const where = path === "" ? "(root)" : path;
  const conflict = conflicts.get(where) ?? { path: where, values: [{ task_id: firstId, value: a }] };
  conflict.values.push({ task_id: taskId, value: b });
  conflicts.set(where, conflict);
  return a;
}

/** The majority answer; ties go to the answer seen first (and say so). */
function vote(outputs: readonly TaskOutput[], normalize: "exact" | "loose"): ReducedOutput {
  const counts = new Map<string, number>();
  for (const o of outputs) {
    const answer =
      normalize === "exact"
        ? o.output
        : o.output
            .trim()
            .toLowerCase()
            .replace(/[.!?\s]+$/u, "");
    counts.set(answer, (counts.get(answer) ?? 0) + 1);
  }
  const ranked = [...counts].map(([answer, votes]) => ({ answer, votes })).sort((x, y) => y.votes - x.votes);
  const top = ranked[0];
  return {
    kind: "vote",
    winner: top?.answer ?? null,
    votes: top?.votes ?? 0,
    total: outputs.length,
    tie: top !== undefined && ranked[1]?.votes === top.votes,
    counts: ranked,
  };
}

/**
 * The reduced answer as it crosses an RPC boundary: JSON values travel as text, since the RPC
 * types of a recursive JSON type do not terminate (TS2589). `fromWire` gives the answer back.
 */
export type ReducedOutputWire =
  | Exclude<ReducedOutput, { kind: "json_merge" }>
  | { kind: "json_merge"; value_json: string; conflicts_json: string; invalid: string[] };

export function toWire(output: ReducedOutput): ReducedOutputWire {
  if (output.kind !== "json_merge") return output;
  return { kind: "json_merge", value_json: JSON.stringify(output.value), conflicts_json: JSON.stringify(output.conflicts), invalid: output.invalid };
}

const ConflictsSchema = z.array(z.object({ path: z.string(), values: z.array(z.object({ task_id: z.string(), value: JsonSchema })) }));

export function fromWire(output: ReducedOutputWire): ReducedOutput {
  if (output.kind !== "json_merge") return output;
  return {
    kind: "json_merge",
    value: JsonSchema.parse(JSON.parse(output.value_json)),
    conflicts: ConflictsSchema.parse(JSON.parse(output.conflicts_json)),
    invalid: output.invalid,
  };
}
