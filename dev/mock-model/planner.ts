// The planner role: turns a goal into `{"tasks":[{id,prompt},…]}` the way the engine's planner
// prompt asks (system prompt starting with [edgeswarm:planner]). Deterministic, no I/O.

import { collapse, firstUrl } from "./conversation.ts";
import type { Conversation } from "./conversation.ts";

export const DEFAULT_MAX_TASKS = 5;
/** Tasks made from a goal that is not a list. */
const ASPECT_TASKS = 4;

export interface PlanTask {
  id: string;
  prompt: string;
}

/** `max_tasks: N` and the goal (the text after a `Goal:` line, to the end of that message) from the user messages. */
export function readPlannerRequest(conv: Conversation): { maxTasks: number; goal: string } {
  let maxTasks: number | undefined;
  let goal: string | undefined;
  for (const text of conv.users) {
    if (maxTasks === undefined) {
      const m = /max_tasks:\s*(\d{1,6})/i.exec(text);
      if (m?.[1] !== undefined) maxTasks = Math.max(1, Number(m[1]));
    }
    if (goal === undefined) {
      const g = /^[ \t]*Goal:[ \t]*(.*)$/im.exec(text);
      if (g !== null) goal = text.slice(g.index + g[0].length - (g[1]?.length ?? 0));
    }
  }
  const source = goal ?? conv.users[0] ?? "";
  const cleaned = source
    .split("\n")
    .filter((line) => !/^\s*max_tasks:\s*\d+\s*$/i.test(line))
    .join("\n")
    .trim();
  return { maxTasks: maxTasks ?? DEFAULT_MAX_TASKS, goal: cleaned };
}

/**
 * One task per list line of the goal (`- x`, `* x`, `1. x`), else min(max_tasks, 4) tasks
 * "Investigate aspect k of: <goal, first 200 chars>"; at most max_tasks; ids t1, t2, …. When the
 * goal has a URL, every prompt without a URL of its own gets ` (source: <url>)` (sub-agents can
 * http_fetch it).
 */
export function planTasks(goal: string, maxTasks: number): PlanTask[] {
  const url = firstUrl(goal);
  // A prompt that already has a URL (its own, or the goal's within the first 200 chars) keeps it alone.
  const withUrl = (prompt: string): string => (url === undefined || firstUrl(prompt) !== undefined ? prompt : `${prompt} (source: ${url})`);
  const items = goal
    .split("\n")
    .map((line) => /^\s*(?:[-*]|\d{1,4}[.)])\s+(.+?)\s*$/.exec(line)?.[1])
    .filter((x): x is string => x !== undefined && x !== "");
  const prompts =
    items.length > 0
      ? items
      : Array.from({ length: Math.min(maxTasks, ASPECT_TASKS) }, (_, k) => `Investigate aspect ${k + 1} of: ${collapse(goal).slice(0, 200)}`);
  return prompts.slice(0, Math.max(1, maxTasks)).map((p, i) => ({ id: `t${i + 1}`, prompt: withUrl(p) }));
}

/** An invalid plan for retry tests: the second task reuses the first one's id. */
export function invalidPlan(tasks: readonly PlanTask[]): PlanTask[] {
  const first = tasks[0] ?? { id: "t1", prompt: "[mock] invalid plan" };
  return tasks.length > 1 ? tasks.map((t, i) => (i === 1 ? { ...t, id: first.id } : t)) : [first, { ...first }];
}

/** The planner's answer text: `{"tasks":[…]}`. */
export function plannerAnswer(conv: Conversation, invalid: boolean): string {
  const { maxTasks, goal } = readPlannerRequest(conv);
  const tasks = planTasks(goal, maxTasks);
  return JSON.stringify({ tasks: invalid ? invalidPlan(tasks) : tasks });
}
