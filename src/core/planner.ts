// The planner step of a swarm whose spec gives a `goal` instead of `tasks`: the planner model's
// request, and the validation of the plan it answers. No I/O.
import { stripCodeFence } from "./structured-output.ts";
import { toErrorMessage } from "./error-message.ts";

/** First line of the planner's system message (the mock model recognises planner calls by it). */
export const PLANNER_MARKER = "[edgeswarm:planner]";
/** Per planned task prompt. */
export const PLAN_MAX_PROMPT_CHARS = 8_000;
/** Errors reported for one plan; they are shown in the swarm's reason and sent back to the planner. */
const MAX_PLAN_ERRORS = 20;
const MAX_ID_CHARS = 200;

export interface PlannerInput {
  goal: string;
  instructions: string | null;
  maxTasks: number;
}

/**
 * `previousErrors`: why the last plan was refused, for the one retry (listed between `max_tasks` and
 * the goal); null on the first call.
 */
export function toPlannerRequest(input: PlannerInput, previousErrors: readonly string[] | null): { system: string; prompt: string } {
  const system = [
    PLANNER_MARKER,
    "You plan the work of a swarm of sub-agents that run in parallel and never see each other's results.",
    "Split the goal into independent sub-tasks, each answerable by one sub-agent on its own.",
    "Answer ONLY with a JSON object of this shape, nothing else:",
    '{"tasks":[{"id":"short-slug","prompt":"…"}]}',
    "Rules:",
    `- at most ${input.maxTasks} tasks; fewer when the goal needs fewer`,
    '- ids are unique and short, made of letters, digits, "-", "_" and "." only (no colon, no whitespace), and do not start with "__"',
    `- each prompt is self-contained (it gives the sub-agent all the context it needs) and at most ${PLAN_MAX_PROMPT_CHARS} characters`,
    "- no two tasks have the same prompt",
    ...(hasText(input.instructions) ? ["", "Instructions from the user:", input.instructions.trim()] : []),
  ].join("\n");
  // The goal stays last: readers take everything after `Goal:` as the goal (the mock model does).
  const retry =
    previousErrors !== null && previousErrors.length > 0
      ? ["Your previous plan was rejected:", ...previousErrors.map((error) => `- ${error}`), "Answer again with a valid plan.", ""]
      : [];
  return { system, prompt: [`max_tasks: ${input.maxTasks}`, "", ...retry, "Goal:", input.goal].join("\n") };
}

export type PlanResult = { ok: true; tasks: { id: string; prompt: string }[] } | { ok: false; errors: string[] };

/**
 * Validates the planner's answer: `{"tasks":[…]}` or a bare array of tasks, optionally in one
 * markdown code fence. A task is `{ id?, prompt }` or a plain string (its prompt). Every problem is
 * reported, each naming its place (`tasks.3.prompt: …`, 0-based); missing ids become `t1`, `t2`, …
 */
export function parsePlan(text: string, maxTasks: number): PlanResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripCodeFence(text));
  } catch (error) {
    return { ok: false, errors: [`the plan is not valid JSON (${toErrorMessage(error)})`] };
  }
  const list = Array.isArray(parsed) ? parsed : isPlainObject(parsed) ? parsed.tasks : undefined;
  if (list === undefined) return { ok: false, errors: ['the plan must be a JSON object {"tasks":[…]} or an array of tasks'] };
  if (!Array.isArray(list)) return { ok: false, errors: ["tasks: must be an array"] };
  if (list.length === 0) return { ok: false, errors: ["tasks: the plan has no tasks"] };

  const errors: string[] = [];
  if (list.length > maxTasks) errors.push(`tasks: ${list.length} tasks, at most ${maxTasks} allowed`);
  const firstWithId = new Map<string, number>();
  const firstWithPrompt = new Map<string, number>();
  const tasks = list.map((raw: unknown, i) => {
    const at = `tasks.${i}`;
    if (typeof raw !== "string" && !isPlainObject(raw)) {
      errors.push(`${at}: must be an object with a prompt, or a string`);
      return { id: undefined, prompt: "" };
    }
    const id = typeof raw === "string" ? undefined : raw.id;
    const prompt = typeof raw === "string" ? raw : raw.prompt;
    let validId: string | undefined;
    if (id !== undefined && id !== null) {
      const checked = checkId(id);
      if (!checked.ok) errors.push(`${at}.id: ${checked.problem}`);
      else {
        const first = firstWithId.get(checked.id);
        if (first === undefined) firstWithId.set(checked.id, i);
        else errors.push(`${at}.id: duplicate id "${checked.id}" (first used by tasks.${first})`);
        validId = checked.id;
      }
    }
    const place = typeof raw === "string" ? at : `${at}.prompt`;
    const trimmed = typeof prompt === "string" ? prompt.trim() : "";
    if (prompt === undefined || prompt === null) errors.push(`${place}: missing`);
    else if (typeof prompt !== "string") errors.push(`${place}: must be a string`);
    else if (trimmed === "") errors.push(`${place}: must not be empty`);
    else if (trimmed.length > PLAN_MAX_PROMPT_CHARS) errors.push(`${place}: must be at most ${PLAN_MAX_PROMPT_CHARS} characters (is ${trimmed.length})`);
    else {
      const key = trimmed.toLowerCase();
      const first = firstWithPrompt.get(key);
      if (first === undefined) firstWithPrompt.set(key, i);
      else errors.push(`${place}: same prompt as tasks.${first}`);
    }
    return { id: validId, prompt: trimmed };
  });
  if (errors.length > 0) return { ok: false, errors: capErrors(errors) };

  const taken = new Set(firstWithId.keys());
  return {
    ok: true,
    tasks: tasks.map((task, i) => {
      if (task.id !== undefined) return { id: task.id, prompt: task.prompt };
      let id = `t${i + 1}`;
      for (let n = 2; taken.has(id); n += 1) id = `t${i + 1}-${n}`;
      taken.add(id);
      return { id, prompt: task.prompt };
    }),
  };
}

/** Ids end up in call ids (`swarm:task:attempt:turn`) and URLs; "__" starts the engine's own. */
function checkId(id: unknown): { ok: true; id: string } | { ok: false; problem: string } {
  if (typeof id !== "string") return { ok: false, problem: "must be a string" };
  const problem = toIdProblem(id);
  return problem === null ? { ok: true, id } : { ok: false, problem };
}

function toIdProblem(id: string): string | null {
  if (id.length === 0) return "must not be empty";
  if (id.length > MAX_ID_CHARS) return `must be at most ${MAX_ID_CHARS} characters`;
  if (!/^[^\s:]+$/.test(id)) return `"${id}" must not contain whitespace or ':'`;
  if (id.startsWith("__")) return `"${id}" must not start with "__" (reserved for the engine)`;
  return null;
}

function capErrors(errors: readonly string[]): string[] {
  if (errors.length <= MAX_PLAN_ERRORS) return [...errors];
  return [...errors.slice(0, MAX_PLAN_ERRORS - 1), `… and ${errors.length - (MAX_PLAN_ERRORS - 1)} more errors`];
}

function hasText(text: string | null): text is string {
  return text !== null && text.trim() !== "";
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
