// Fail fast (limits.stop_after_failures): the run of sub-tasks that ended with the same permanent
// error class and no success between, and when it stops a swarm's dispatch. No I/O.
import { z } from "zod";
import { ERROR_CLASSES, type ErrorClass } from "./error-class.ts";
import type { TaskOutcome } from "./swarm-contract.ts";

/**
 * Classes that say the spec, the key or the model is wrong rather than one task: the next task will
 * fail the same way. `context_length` and `turn_limit` depend on the task's own prompt, and a
 * retryable class that ran out of attempts is the circuits' business (an upstream that is down).
 */
export const STREAK_ERROR_CLASSES: readonly ErrorClass[] = ["invalid_output", "auth", "quota_exceeded", "bad_request", "not_found"];

/** A sample message is kept this short (it goes into the status's `reason`). */
const SAMPLE_MAX_CHARS = 200;

export const FailureStreakSchema = z.object({
  /** The class of the current run; null when there is none. */
  errorClass: z.enum(ERROR_CLASSES).nullable(),
  count: z.number().int().min(0),
  /** The message of the run's first task. */
  sample: z.string().nullable(),
  /** The run reached the limit: dispatch stopped for good (a later success does not restart it). */
  stopped: z.boolean(),
});
export type FailureStreak = z.infer<typeof FailureStreakSchema>;

export const NO_STREAK: FailureStreak = { errorClass: null, count: 0, sample: null, stopped: false };

/** How a sub-task ended, as far as the streak cares. */
export type TaskEnd = { kind: "succeeded" } | { kind: "failed"; errorClass: ErrorClass | null; message: string };

/**
 * The streak after one more sub-task ended. A success ends the run; a failure of a streak class
 * extends a run of its class or starts one; any other failure ends the run. `limit` 0 never stops.
 */
export function noteTaskEnd(streak: FailureStreak, end: TaskEnd, limit: number): FailureStreak {
  if (streak.stopped) return streak;
  if (end.kind === "succeeded" || end.errorClass === null || !STREAK_ERROR_CLASSES.includes(end.errorClass)) return NO_STREAK;
  const count = end.errorClass === streak.errorClass ? streak.count + 1 : 1;
  const sample = count === 1 ? end.message.slice(0, SAMPLE_MAX_CHARS) : streak.sample;
  return { errorClass: end.errorClass, count, sample, stopped: limit > 0 && count >= limit };
}

/**
 * How many tasks may be in flight while a run goes on (null: no bound). From half the limit on, at
 * most the failures the run still lacks to stop the swarm: if those fail the same way, it stops
 * without a task handed out in vain; a success ends the run and the bound. Below half, a run is as
 * likely a swarm's ordinary failures, and the window is left alone.
 */
export function toRunInFlightCap(streak: FailureStreak, limit: number): number | null {
  if (limit <= 0 || streak.stopped || streak.count * 2 < limit) return null;
  return Math.max(0, limit - streak.count);
}

/**
 * Whether a sub-task's outcome, as its lane sees it, extends a run that may stop the swarm: a
 * failure never retried, of a streak class. The lane then starts no standby task in its place until
 * the room has answered the pull that reports it (run-lane.ts): that answer says whether the run
 * stopped the swarm (the standby tasks go back and end skipped) or gives them the window (`run`).
 */
export function extendsRun(outcome: TaskOutcome): boolean {
  return outcome.kind === "failed" && !outcome.retryable && STREAK_ERROR_CLASSES.includes(outcome.class);
}

/** The status's `reason` once the streak stopped the swarm (counts.skipped says how many were skipped). */
export function toStreakReason(streak: FailureStreak): string {
  return (
    `stopped early: ${streak.count} tasks in a row failed with ${streak.errorClass ?? "an error"} (limits.stop_after_failures), e.g. "${streak.sample ?? ""}"; ` +
    `the tasks not yet run are skipped — fix the cause and rerun them (POST /v1/swarms/:id/rerun {"tasks":"not_succeeded"})`
  );
}

/** The stored streak (a swarm row's JSON column), or none. */
export function parseFailureStreak(json: string | null): FailureStreak {
  return json === null ? NO_STREAK : FailureStreakSchema.parse(JSON.parse(json));
}
