// How `npm run swarm` shows how a swarm's answer was made: the plan of a goal, the reduced answer
// by reducer kind, and the calls and tool calls behind it. Reads the status body loosely (the CLI
// must not break on fields it does not know) and validates what it prints.
import { z } from "zod";

const PlanSchema = z.looseObject({
  goal: z.string(),
  model: z.string(),
  state: z.string(),
  attempts: z.number(),
  task_count: z.number(),
  errors: z.array(z.string()),
});
const PlanTasksSchema = z.looseObject({ tasks: z.array(z.object({ id: z.string(), prompt: z.string() })) });
const LevelSchema = z.object({ level: z.number(), inputs: z.number(), tasks: z.number(), failed: z.number() });
const OutputSchema = z.discriminatedUnion("kind", [
  z.looseObject({ kind: z.literal("collect"), results: z.array(z.object({ task_id: z.string(), output: z.string() })), truncated: z.boolean() }),
  z.looseObject({ kind: z.literal("concat"), text: z.string(), truncated: z.boolean() }),
  z.looseObject({ kind: z.literal("json_merge"), value: z.unknown(), conflicts: z.array(z.unknown()), invalid: z.array(z.string()) }),
  z.looseObject({ kind: z.literal("vote"), winner: z.string().nullable(), votes: z.number(), total: z.number(), tie: z.boolean() }),
  z.looseObject({
    kind: z.literal("llm"),
    text: z.string().nullable(),
    model: z.string(),
    levels: z.array(LevelSchema),
    inputs: z.number(),
    truncated: z.array(z.string()),
  }),
]);
const StatusSchema = z.looseObject({
  usage: z.looseObject({ calls: z.number() }),
  tool_calls: z.number().optional(),
  reason: z.string().nullable().optional(),
  plan: PlanSchema.nullable().optional(),
  output: OutputSchema.nullable().optional(),
});

/** Characters of an answer printed inline; the API has all of it. */
const MAX_PRINTED = 4_000;

const clip = (text: string): string =>
  text.length <= MAX_PRINTED ? text : `${text.slice(0, MAX_PRINTED)}\n… (${text.length - MAX_PRINTED} more characters: see the API)`;
const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
};

/** The lines after the summary: calls and tool calls, the plan, the answer. */
export function formatAnswer(statusBody: unknown, planBody: unknown | null): string[] {
  const status = StatusSchema.parse(statusBody);
  const lines: string[] = [`model calls=${status.usage.calls} tool calls=${status.tool_calls ?? 0}`];
  if (status.reason) lines.push(`reason: ${status.reason}`);
  if (status.plan) {
    const plan = status.plan;
    lines.push(
      `plan (${plan.state}, ${plan.attempts} planner call(s), model ${plan.model}): ${plan.task_count} task(s) from the goal "${oneLine(plan.goal, 80)}"`,
    );
    for (const error of plan.errors) lines.push(`  refused: ${error}`);
    const tasks = planBody === null ? [] : PlanTasksSchema.parse(planBody).tasks;
    for (const task of tasks.slice(0, 20)) lines.push(`  ${task.id}: ${oneLine(task.prompt, 100)}`);
    if (tasks.length > 20) lines.push(`  … and ${tasks.length - 20} more`);
  }
  const output = status.output;
  if (output === null || output === undefined) return lines;
  switch (output.kind) {
    case "collect":
      lines.push(`answer (collect): ${output.results.length} result(s)${output.truncated ? " (truncated: page /results for all)" : ""}`);
      break;
    case "concat":
      lines.push("answer (concat):", clip(output.text));
      break;
    case "json_merge":
      lines.push(
        `answer (json_merge${output.conflicts.length > 0 ? `, ${output.conflicts.length} conflict(s)` : ""}${output.invalid.length > 0 ? `, unparseable: ${output.invalid.join(", ")}` : ""}):`,
        clip(JSON.stringify(output.value, null, 2)),
      );
      break;
    case "vote":
      lines.push(`answer (vote): ${output.winner ?? "none"} — ${output.votes} of ${output.total} vote(s)${output.tie ? " (tie)" : ""}`);
      break;
    case "llm": {
      const levels = output.levels.map((l) => `level ${l.level}: ${l.inputs} → ${l.tasks}${l.failed > 0 ? ` (${l.failed} failed)` : ""}`).join(", ");
      lines.push(
        `answer (llm, ${output.model}; ${output.inputs} result(s); ${levels}):`,
        output.text === null ? "(no answer: the reduction failed)" : clip(output.text),
      );
      break;
    }
  }
  return lines;
}
