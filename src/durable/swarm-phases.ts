// A swarm's phases beyond running its sub-tasks: planning a goal (the planner's call, its
// validation, one retry) and the llm reduction (levels of reducer calls until one answer remains).
// Both run as engine tasks in the `tasks` table, dispatched and recorded like sub-tasks; these
// functions insert them and move the swarm on when they end, and say how it ends (`toSwarmEnd`).
// The room calls `advancePhase` after outcomes land.
import { z } from "zod";
import { chunkForContext, fixedReducerPromptTokens, reducerInputBudget, toReducerRequest, type ReduceItem } from "../core/llm-reduction.ts";
import { parsePlan, toPlannerRequest } from "../core/planner.ts";
import { ReduceSpecSchema, type LlmReducedOutput, type LlmReduceSpec, type ReduceSpec, type TaskOutput } from "../core/reducers.ts";
import { PlannerSpecSchema, type Limits, type PlannedTask, type PlannerSpec } from "../core/spec-schema.ts";
import type { PlanView, ReductionView, SwarmState, TaskCounts, TaskKind, TaskOverride, TaskState } from "../core/swarm-contract.ts";
import { chunkBySize } from "../core/size-chunks.ts";
import { decideCompletion, isTerminal } from "../core/task-transitions.ts";
import { WeightedModelsSchema, type SwarmRow } from "./swarm-room-rows.ts";

/** The reducer's context window when neither the spec nor the gateway names one. */
const DEFAULT_REDUCER_CONTEXT_TOKENS = 32_000;
/** A planner's answer lists up to max_tasks prompts; its output limit grows with them. */
const PLANNER_TOKENS_PER_TASK = 300;
/** The planner is asked at most this often: a refused plan gets one retry that is told why. */
export const PLAN_ATTEMPTS = 2;

/** `swarm.reduction`: the llm reduction's progress and, once done, its answer. */
const ReductionSchema = z.object({
  model: z.string(),
  context_tokens: z.number(),
  inputs: z.number(),
  truncated: z.array(z.string()),
  levels: z.array(z.object({ level: z.number(), inputs: z.number(), tasks: z.number(), failed: z.number() })),
  text: z.string().nullable(),
  done: z.boolean(),
});
type Reduction = z.infer<typeof ReductionSchema>;

/** What the phases read of the room beyond its SQL. */
export interface PhaseRoom {
  sql: SqlStorage;
  /** Sub-task counts (kind = task). */
  counts(): TaskCounts;
  /** Succeeded sub-task outputs in task order. */
  succeededOutputs(): TaskOutput[];
  limits(swarm: SwarmRow): Limits;
  /** The gateway's context size of a model, when it has one. */
  gatewayContext(model: string): number | undefined;
}

export function insertTasks(sql: SqlStorage, tasks: readonly PlannedTask[]): void {
  // A few statements, each inserting a run of tasks from one JSON text, in order (seq follows the
  // spec): one statement a task made a swarm's start a statement loop (1,000 tasks took ~10 ms of
  // the room's start, on the path to its first call; 10,000 ten times that).
  for (const chunk of chunkBySize(tasks, taskInsertSize, TASK_INSERT_CHUNK_CHARS, TASK_INSERT_CHUNK_ROWS)) {
    sql.exec(
      `INSERT INTO tasks (id, prompt, state, long, model_hint)
       SELECT value ->> 0, value ->> 1, 'pending', value ->> 2, value ->> 3 FROM json_each(?) ORDER BY key`,
      JSON.stringify(chunk.map((task) => [task.id, task.prompt, task.long ? 1 : 0, task.model ?? null])),
    );
  }
}

/**
 * The characters of tasks one insert binds, as one JSON text: a bound string is a value of at most
 * 2 MB in Durable Object SQLite ("Maximum string, BLOB or table row size",
 * developers.cloudflare.com/durable-objects/platform/limits), and JSON writes a character in at most
 * 6 bytes (a control character's \uXXXX; any other at most 3 in UTF-8). A task of up to
 * MAX_PROMPT_CHARS goes alone when it does not fit beside others.
 */
const TASK_INSERT_CHUNK_CHARS = 250_000;
/** Tasks one insert writes at most, whatever their size. */
const TASK_INSERT_CHUNK_ROWS = 1_000;

/** A task's characters in the insert's JSON text (its fields, and room for the array's punctuation). */
function taskInsertSize(task: PlannedTask): number {
  return task.id.length + task.prompt.length + (task.model?.length ?? 0) + 16;
}

/** An engine task (planner or reducer call): one call on its own model with its own system prompt. */
function insertEngineTask(sql: SqlStorage, id: string, kind: TaskKind, prompt: string, model: string, override: TaskOverride): void {
  sql.exec(
    "INSERT INTO tasks (id, prompt, state, kind, model_hint, override) VALUES (?, ?, 'pending', ?, ?, ?)",
    id,
    prompt,
    kind,
    model,
    JSON.stringify(override),
  );
}

/** The first model of the swarm's mix: the planner's and the reducer's default. */
export function firstModel(swarm: Pick<SwarmRow, "model" | "model_mix">): string {
  return swarm.model_mix === null ? swarm.model : (WeightedModelsSchema.parse(JSON.parse(swarm.model_mix))[0]?.model ?? swarm.model);
}

/** The planner's and the llm reducer's models (their own, or the first model of the mix). */
export function engineModels(
  phases: { goal: string | null | undefined; plannerModel: string | undefined; reduce: ReduceSpec | undefined },
  first: string,
): string[] {
  return [
    ...(phases.goal !== null && phases.goal !== undefined ? [phases.plannerModel ?? first] : []),
    ...(phases.reduce?.kind === "llm" ? [reducerModel(phases.reduce, first)] : []),
  ];
}

export function plannerOf(swarm: Pick<SwarmRow, "planner">): PlannerSpec | null {
  return swarm.planner === null ? null : PlannerSpecSchema.parse(JSON.parse(swarm.planner));
}

/** The last reducer text parsed: a swarm's reducer never changes, and every pull asks for it. */
let lastReduce: { text: string; spec: ReduceSpec } | null = null;

export function reduceSpecOf(swarm: Pick<SwarmRow, "reduce">): ReduceSpec {
  if (swarm.reduce === null) return { kind: "collect" };
  if (lastReduce?.text !== swarm.reduce) lastReduce = { text: swarm.reduce, spec: ReduceSpecSchema.parse(JSON.parse(swarm.reduce)) };
  return lastReduce.spec;
}

export function reducerModel(reduce: LlmReduceSpec, first: string): string {
  return reduce.model ?? first;
}

/** The spec's context_tokens, else the gateway's context size of the model, else 32,000. */
export function reducerContextTokens(reduce: LlmReduceSpec, model: string, gatewayContext: (model: string) => number | undefined): number {
  return reduce.context_tokens ?? gatewayContext(model) ?? DEFAULT_REDUCER_CONTEXT_TOKENS;
}

export function plannerOutputTokens(planner: PlannerSpec, maxOutputTokens: number): number {
  return Math.min(128_000, Math.max(maxOutputTokens, planner.max_tasks * PLANNER_TOKENS_PER_TASK + 500));
}

/** The planner's call for the goal: attempt 1, or the retry that is told why the last plan was refused. */
export function insertPlanTask(
  sql: SqlStorage,
  swarm: Pick<SwarmRow, "plan_attempts" | "goal" | "model" | "model_mix">,
  planner: PlannerSpec,
  limits: Limits,
  previousErrors: string[] | null,
): void {
  if (swarm.goal === null) return;
  const attempt = swarm.plan_attempts + 1;
  const request = toPlannerRequest({ goal: swarm.goal, instructions: planner.instructions ?? null, maxTasks: planner.max_tasks }, previousErrors);
  insertEngineTask(sql, `__plan.${attempt}`, "plan", request.prompt, planner.model ?? firstModel(swarm), {
    system: request.system,
    responseFormat: { type: "json_object" },
    maxOutputTokens: plannerOutputTokens(planner, limits.max_output_tokens),
  });
  sql.exec("UPDATE swarm SET plan_attempts = ?", attempt);
}

/** The phase steps that depend on engine tasks: a finished plan, finished sub-tasks, a finished reduce level. */
export function advancePhase(room: PhaseRoom, swarm: SwarmRow): void {
  if (swarm.state === "planning") advancePlanning(room, swarm);
  else if (swarm.state === "running") startReductionWhenDone(room, swarm);
  else if (swarm.state === "reducing") advanceReduction(room.sql, swarm);
}

/** The planner answered: a valid plan becomes the swarm's tasks; an invalid one is asked for once more, then the swarm fails. */
function advancePlanning(room: PhaseRoom, swarm: SwarmRow): void {
  const { sql } = room;
  const plan = sql
    .exec<{ state: TaskState; output: string | null; error_class: string | null; error_message: string | null }>(
      "SELECT state, output, error_class, error_message FROM tasks WHERE kind = 'plan' ORDER BY seq DESC LIMIT 1",
    )
    .toArray()[0];
  const planner = plannerOf(swarm);
  if (plan === undefined || planner === null || !isTerminal(plan.state)) return;
  if (plan.state !== "succeeded" || plan.output === null) {
    // The planner call itself failed (after its retries), was skipped by the budget, or cancelled.
    if (plan.state === "failed") {
      sql.exec("UPDATE swarm SET reason = ?, index_dirty = 1", `planning failed: the planner call failed (${plan.error_class}: ${plan.error_message ?? ""})`);
    }
    return;
  }
  const parsed = parsePlan(plan.output, planner.max_tasks);
  if (!parsed.ok) {
    sql.exec("UPDATE swarm SET plan_errors = ?, index_dirty = 1", JSON.stringify(parsed.errors));
    console.warn(JSON.stringify({ event: "plan_refused", swarm_id: swarm.id, attempt: swarm.plan_attempts, errors: parsed.errors.slice(0, 5) }));
    if (swarm.plan_attempts < PLAN_ATTEMPTS) {
      insertPlanTask(sql, swarm, planner, room.limits(swarm), parsed.errors);
    } else {
      sql.exec(
        "UPDATE swarm SET reason = ?",
        `planning failed: the planner's plan was invalid ${swarm.plan_attempts} time(s): ${parsed.errors.slice(0, 5).join("; ")}`,
      );
    }
    return;
  }
  insertTasks(sql, parsed.tasks);
  sql.exec("UPDATE swarm SET state = 'running', task_count = ?, plan_errors = NULL, index_dirty = 1", parsed.tasks.length);
}

/** Every sub-task ended and the reducer is `llm`: the reduction starts with the succeeded outputs. */
function startReductionWhenDone(room: PhaseRoom, swarm: SwarmRow): void {
  const reduce = reduceSpecOf(swarm);
  if (reduce.kind !== "llm") return;
  const counts = room.counts();
  if (counts.queued + counts.running > 0) return;
  const model = reducerModel(reduce, firstModel(swarm));
  const outputs = room.succeededOutputs();
  const reduction: Reduction = {
    model,
    context_tokens: reducerContextTokens(reduce, model, room.gatewayContext),
    inputs: outputs.length,
    truncated: [],
    levels: [],
    text: null,
    done: outputs.length === 0,
  };
  room.sql.exec("UPDATE swarm SET state = 'reducing', reduction = ?, index_dirty = 1", JSON.stringify(reduction));
  if (outputs.length === 0) {
    room.sql.exec("UPDATE swarm SET reason = COALESCE(reason, 'no task succeeded: nothing to reduce')");
    return;
  }
  insertReduceLevel(
    room.sql,
    swarm,
    reduce,
    reduction,
    outputs.map((o) => ({ id: o.task_id, text: o.output })),
  );
}

/** Cuts the inputs into chunks that fit the reducer's context and queues one reduce task per chunk. */
function insertReduceLevel(sql: SqlStorage, swarm: SwarmRow, reduce: LlmReduceSpec, reduction: Reduction, items: ReduceItem[]): void {
  const level = reduction.levels.length + 1;
  const fixed = fixedReducerPromptTokens(reduce.instructions ?? null, swarm.goal);
  const budget = reducerInputBudget(reduction.context_tokens, reduce.max_output_tokens, fixed);
  const { chunks, truncated } = chunkForContext(items, budget);
  const final = chunks.length === 1;
  chunks.forEach((chunk, i) => {
    const request = toReducerRequest({ instructions: reduce.instructions ?? null, goal: swarm.goal, items: chunk, level, final });
    insertEngineTask(sql, `__reduce.${level}.${i + 1}`, "reduce", request.prompt, reduction.model, {
      system: request.system,
      responseFormat: null,
      maxOutputTokens: reduce.max_output_tokens,
    });
  });
  reduction.truncated.push(...truncated);
  reduction.levels.push({ level, inputs: items.length, tasks: chunks.length, failed: 0 });
  sql.exec("UPDATE swarm SET reduction = ?", JSON.stringify(reduction));
}

/** A reduce level ended: its outputs become the next level's inputs, until one answer remains. */
function advanceReduction(sql: SqlStorage, swarm: SwarmRow): void {
  const reduction = reductionOf(swarm);
  const reduce = reduceSpecOf(swarm);
  if (reduction === null || reduction.done || reduce.kind !== "llm") return;
  const current = reduction.levels[reduction.levels.length - 1];
  if (current === undefined) return;
  const prefix = `__reduce.${current.level}.`;
  const rows = sql
    // A prefix test, not LIKE: "_" is a LIKE wildcard.
    .exec<{ id: string; state: TaskState; output: string | null }>(
      "SELECT id, state, output FROM tasks WHERE kind = 'reduce' AND substr(id, 1, ?) = ? ORDER BY seq",
      prefix.length,
      prefix,
    )
    .toArray();
  if (rows.some((row) => !isTerminal(row.state))) return;
  const outputs = rows.filter((row) => row.state === "succeeded" && row.output !== null);
  current.failed = rows.length - outputs.length;
  if (rows.length === 1 || outputs.length === 0) {
    // The last level: its one answer is the swarm's (null when it failed).
    reduction.text = rows.length === 1 ? (outputs[0]?.output ?? null) : null;
    reduction.done = true;
    sql.exec("UPDATE swarm SET reduction = ?, index_dirty = 1", JSON.stringify(reduction));
    if (reduction.text === null) {
      const why = sql
        .exec<{ m: string | null }>("SELECT error_message AS m FROM tasks WHERE kind = 'reduce' AND state != 'succeeded' ORDER BY seq DESC LIMIT 1")
        .toArray()[0]?.m;
      sql.exec("UPDATE swarm SET reason = COALESCE(reason, ?)", `the llm reduction failed at level ${current.level}${why ? `: ${why}` : ""}`);
    }
    return;
  }
  sql.exec("UPDATE swarm SET reduction = ?", JSON.stringify(reduction));
  insertReduceLevel(
    sql,
    swarm,
    reduce,
    reduction,
    outputs.map((row) => ({ id: row.id, text: row.output ?? "" })),
  );
}

function reductionOf(swarm: Pick<SwarmRow, "reduction">): Reduction | null {
  return swarm.reduction === null ? null : ReductionSchema.parse(JSON.parse(swarm.reduction));
}

/**
 * How the swarm ends once no task is open: its final state and why (the reason it already has, else
 * its failures); null while tasks are open.
 */
export function toSwarmEnd(swarm: SwarmRow, open: number, counts: TaskCounts): { state: SwarmState; reason: string | null } | null {
  let state = open > 0 ? null : decideCompletion(counts, swarm.state === "cancelled");
  if (state === null) return null;
  // Plan and reduce tasks ended too: a swarm whose plan or final reduction failed says so.
  const failedPhase = phaseFailure(swarm);
  if (failedPhase !== null && state !== "cancelled") state = failedPhase;
  const reason =
    swarm.reason ??
    (state === "completed_with_failures"
      ? `${counts.failed} task(s) failed${counts.skipped_budget > 0 ? `, ${counts.skipped_budget} skipped (budget)` : ""}${counts.skipped > 0 ? `, ${counts.skipped} skipped` : ""}`
      : null);
  return { state, reason };
}

/** The phase that failed the swarm, if one did: the plan (`failed`) or the final reduction. */
function phaseFailure(swarm: SwarmRow): "failed" | "completed_with_failures" | null {
  if (swarm.state === "planning") return "failed";
  if (swarm.state === "reducing" && reductionOf(swarm)?.text === null) return "completed_with_failures";
  return null;
}

/** The llm reducer's answer and how it was made; null before the reduction started. */
export function llmOutput(swarm: SwarmRow): LlmReducedOutput | null {
  const reduction = reductionOf(swarm);
  if (reduction === null) return null;
  const { model, context_tokens, levels, inputs, truncated, text } = reduction;
  return { kind: "llm", text, model, context_tokens, levels, inputs, truncated };
}

export function reductionView(swarm: SwarmRow): ReductionView | null {
  const reduction = reductionOf(swarm);
  if (reduction === null) return null;
  return { model: reduction.model, context_tokens: reduction.context_tokens, levels: reduction.levels, done: reduction.done };
}

export function planView(swarm: SwarmRow): PlanView | null {
  const planner = plannerOf(swarm);
  if (swarm.goal === null || planner === null) return null;
  const failed = swarm.state !== "planning" && swarm.task_count === 0;
  return {
    goal: swarm.goal,
    model: planner.model ?? firstModel(swarm),
    state: swarm.state === "planning" ? "planning" : failed ? "failed" : "planned",
    attempts: swarm.plan_attempts,
    task_count: swarm.task_count,
    errors: swarm.plan_errors === null ? [] : z.array(z.string()).parse(JSON.parse(swarm.plan_errors)),
  };
}
