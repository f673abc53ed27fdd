// The decisions of a task's life cycle, as pure functions: may this delivery run the task, and
// what does a reported outcome do to it. The SwarmRoom applies them to its SQL rows. No I/O.
import type { ErrorClass } from "./error-class.ts";
import type { SwarmState, TaskCounts, TaskOutcome, TaskState } from "./swarm-contract.ts";
import { TERMINAL_TASK_STATES } from "./swarm-contract.ts";

export interface TaskLifeRow {
  state: TaskState;
  /** Claims granted so far. */
  attempts: number;
  /** Lease end for `running`, epoch ms; null otherwise. */
  leaseUntil: number | null;
}

export type GrantDecision =
  | { kind: "grant"; attempt: number }
  /** Not this task now: it is done, leased, waiting to retry later, or unknown. */
  | { kind: "skip" }
  /** Its attempts are used up (a lease ran out on the last one): it fails instead of running again. */
  | { kind: "fail"; errorClass: ErrorClass; message: string };

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_TASK_STATES.includes(state);
}

/**
 * May a pull hand this task out now? Pending tasks (the window decided they enter it) and tasks
 * whose retry is due are granted as their next attempt; a live lease, a retry not yet due and an
 * ended task are skipped, so a repeated or concurrent pull never hands a task out twice.
 */
export function decideGrant(task: (TaskLifeRow & { retryAt: number | null }) | null, now: number, maxAttempts: number): GrantDecision {
  if (task === null || isTerminal(task.state)) return { kind: "skip" };
  if (task.state === "running" && task.leaseUntil !== null && task.leaseUntil > now) return { kind: "skip" };
  if (task.state === "retry_wait" && task.retryAt !== null && task.retryAt > now) return { kind: "skip" };
  if (task.attempts >= maxAttempts) {
    return {
      kind: "fail",
      errorClass: "lease_expired",
      message: `no outcome was reported within the lease of attempt ${task.attempts} of ${maxAttempts}`,
    };
  }
  return { kind: "grant", attempt: task.attempts + 1 };
}

export type RecordDecision =
  | { kind: "succeed" }
  | { kind: "fail" }
  /**
   * Wait and run again. `free`: the upstream said "slower" (429), which is back-pressure, not the
   * task failing: the attempt is given back to max_attempts (the swarm's retry budget still pays).
   */
  | { kind: "retry"; free: boolean }
  /** The attempt never called the model: hand the attempt back and redeliver later. */
  | { kind: "defer" }
  /** The report changes nothing: the task is done, or a newer attempt owns it. */
  | { kind: "ignore" };

export function decideRecord(task: TaskLifeRow | null, attempt: number, outcome: TaskOutcome, maxAttempts: number): RecordDecision {
  if (task === null || isTerminal(task.state)) return { kind: "ignore" };
  if (attempt < 1 || attempt > task.attempts) return { kind: "ignore" };
  // A success is kept even from an older attempt: the answer is valid and already paid for.
  if (outcome.kind === "succeeded") return { kind: "succeed" };
  if (attempt < task.attempts) return { kind: "ignore" };
  // A repeated report of the attempt that is already waiting to retry gets the same answer.
  if (task.state !== "running" && task.state !== "retry_wait") return { kind: "ignore" };
  if (outcome.kind === "deferred") return task.state === "running" ? { kind: "defer" } : { kind: "ignore" };
  if (!outcome.retryable) return { kind: "fail" };
  if (outcome.class === "rate_limited") return { kind: "retry", free: true };
  if (attempt >= maxAttempts) return { kind: "fail" };
  return { kind: "retry", free: false };
}

/** The swarm's state once no task is open, or null while some still are. */
export function decideCompletion(counts: TaskCounts, cancelled: boolean): SwarmState | null {
  if (counts.queued + counts.running > 0) return null;
  if (cancelled) return "cancelled";
  return counts.failed + counts.skipped_budget + counts.skipped + counts.cancelled > 0 ? "completed_with_failures" : "completed";
}
