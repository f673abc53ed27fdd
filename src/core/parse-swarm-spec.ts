// Turns an untrusted swarm spec (a request body, or a spec stored with a schedule) into a validated,
// planned swarm: the spec without its tasks, and the tasks with unique ids. No I/O.
// Every refusal is a list of `{ path, message }` so the HTTP layer can answer 400 naming each field.
import { toIssuePath, type ErrorDetail } from "./errors.ts";
import { planTasks } from "./plan-tasks.ts";
import { err, ok, type Result } from "./result.ts";
import { checkSchemaDefinition } from "./structured-output.ts";
import { SwarmSpecSchema, type PlannedTask, type SwarmSpec } from "./spec-schema.ts";

export interface PlannedSwarm {
  spec: Omit<SwarmSpec, "tasks">;
  tasks: PlannedTask[];
}

/**
 * Validates `input` against the swarm spec schema and plans its task ids.
 * `at` is where the spec sits in the request body (e.g. `["spec"]` inside a schedule), so every
 * path names the field as the caller sent it: `spec.tasks.3.prompt`.
 */
export function parseSwarmSpec(input: unknown, at: readonly PropertyKey[] = []): Result<PlannedSwarm, ErrorDetail[]> {
  const parsed = SwarmSpecSchema.safeParse(input);
  if (!parsed.success) {
    return err(parsed.error.issues.map((issue) => ({ path: toIssuePath([...at, ...issue.path]), message: issue.message })));
  }
  const { tasks, ...spec } = parsed.data;
  const problems = checkSpecSemantics(spec).map((detail) => ({ path: toIssuePath([...at, ...detail.path]), message: detail.message }));
  if (problems.length > 0) return err(problems);
  // A goal's tasks come from the planner once the swarm runs.
  const planned = planTasks(tasks ?? []);
  if (!planned.ok) {
    const prefix = at.length === 0 ? "" : `${toIssuePath(at)}.`;
    return err(planned.error.map((detail) => ({ path: prefix + detail.path, message: detail.message })));
  }
  return ok({ spec, tasks: planned.value });
}

/** What the schema cannot see: a response schema or tool parameters schema the validator cannot use. */
function checkSpecSemantics(spec: Omit<SwarmSpec, "tasks">): { path: PropertyKey[]; message: string }[] {
  const problems: { path: PropertyKey[]; message: string }[] = [];
  const format = spec.response_format;
  if (format?.type === "json_schema") {
    problems.push(...checkSchemaDefinition(format.json_schema.schema).map((message) => ({ path: ["response_format", "json_schema", "schema"], message })));
  }
  (spec.tools ?? []).forEach((tool, i) => {
    if (typeof tool === "string") return;
    problems.push(...checkSchemaDefinition(tool.parameters).map((message) => ({ path: ["tools", i, "parameters"], message })));
  });
  return problems;
}

/** The planned swarm as a complete spec again (tasks keep their planned ids), e.g. to store it. */
export function toSwarmSpec(planned: PlannedSwarm): SwarmSpec {
  return {
    ...planned.spec,
    ...(planned.spec.goal !== undefined
      ? {}
      : { tasks: planned.tasks.map((task) => ({ id: task.id, prompt: task.prompt, ...(task.long ? { long: true } : {}) })) }),
  };
}
