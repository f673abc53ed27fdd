// Tests' lane reports: a task's outcome with the one model call that produced it, as a lane's pull
// carries it (TaskReport). Shared by the SwarmRoom's test files; not part of any Worker.
import type { TaskOutcome, TaskReport } from "../core/swarm-contract.ts";
import type { Usage } from "../core/usage.ts";

/** What a report's call used when a test does not say (a small success's usage). */
export const FIXTURE_USAGE: Usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cached_tokens: 0, reasoning_tokens: 0 };

/** One task's report with its one call: `ok` for a success, `error` (with the failure's class) otherwise. */
export function taskReport(
  taskId: string,
  attempt: number,
  outcome: TaskOutcome,
  call: { usage?: Usage | null; model?: string; latencyMs?: number } = {},
): TaskReport {
  return {
    taskId,
    attempt,
    outcome,
    calls: [
      {
        turn: 1,
        model: call.model ?? "mock-1",
        usage: call.usage === undefined ? FIXTURE_USAGE : call.usage,
        latencyMs: call.latencyMs ?? 100,
        status: outcome.kind === "succeeded" ? "ok" : "error",
        errorClass: outcome.kind === "failed" ? outcome.class : null,
        startedAt: Date.now(),
      },
    ],
  };
}
