// Turns a validated spec's task list into planned tasks with unique ids. No I/O.
// Ids given by the user are kept; missing ids are generated in order (`t00001`, `t00002`, …),
// skipping any id the user already took, so a rerun of the same spec gets the same ids.
import type { ErrorDetail } from "./errors.ts";
import { err, ok, type Result } from "./result.ts";
import type { PlannedTask, TaskInput } from "./spec-schema.ts";

export function planTasks(tasks: readonly TaskInput[]): Result<PlannedTask[], ErrorDetail[]> {
  const firstIndexOf = new Map<string, number>();
  const issues: ErrorDetail[] = [];
  tasks.forEach((task, index) => {
    if (task.id === undefined) return;
    const first = firstIndexOf.get(task.id);
    if (first === undefined) firstIndexOf.set(task.id, index);
    else issues.push({ path: `tasks.${index}.id`, message: `duplicate task id "${task.id}" (first used by tasks.${first})` });
  });
  if (issues.length > 0) return err(issues);

  const width = Math.max(5, String(tasks.length).length);
  let counter = 0;
  const nextGeneratedId = (): string => {
    for (;;) {
      counter += 1;
      const id = `t${String(counter).padStart(width, "0")}`;
      if (!firstIndexOf.has(id)) return id;
    }
  };
  return ok(tasks.map((task) => ({ id: task.id ?? nextGeneratedId(), prompt: task.prompt, ...(task.long ? { long: true } : {}) })));
}
