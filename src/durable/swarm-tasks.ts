// The life of a task once granted: its end (succeeded, failed, cancelled), its wait for a retry, its
// return unstarted, its checkpoints, and its lease — which leases ran out, and when the alarm must next look at one.
// It never grants a task (SwarmDispatch does) and never decides an outcome (core/task-transitions.ts).
import type { ErrorClass } from "../core/error-class.ts";
import { IN_FLIGHT_TASK_STATES, type AgentCheckpoint, type ClaimedTask, type TaskPool } from "../core/swarm-contract.ts";
import { LEASED_STATES, TASK_COLUMNS, type SwarmRow, type TaskRow } from "./swarm-room-rows.ts";
import type { SwarmStore } from "./swarm-store.ts";
import type { SwarmTotals } from "./swarm-totals.ts";

/** A checkpoint shares its task's row (2 MB in all) with the prompt (≤ 200,000 chars) and output. */
const CHECKPOINT_MAX_BYTES = 1_000_000;

export class SwarmTasks {
  /** The earliest lease set since the alarm last looked (the alarm reads the exact one). */
  private nextDeadline: number | null = null;

  constructor(
    private readonly sql: SqlStorage,
    private readonly store: SwarmStore,
    private readonly totals: SwarmTotals,
  ) {}

  /** The task waits to be handed out again at `retryAt`, holding its place in the window. */
  toRetryWait(task: TaskRow, retryAt: number, error?: { errorClass: ErrorClass; message: string }): void {
    this.sql.exec(
      `UPDATE tasks SET state = 'retry_wait', retry_at = ?, deadline = NULL, standby = 0,
         error_class = COALESCE(?, error_class), error_message = COALESCE(?, error_message) WHERE id = ?`,
      retryAt,
      error?.errorClass ?? null,
      error?.message ?? null,
      task.id,
    );
    this.totals.move(task.kind, task.state, "retry_wait");
    this.leftStandby(task);
  }

  /**
   * A task handed back unstarted (a standby task its lane released): pending again, its lease and
   * its reservation let go, as if it had never been granted (its attempt number stays used).
   */
  toPending(task: TaskRow): void {
    this.sql.exec(
      "UPDATE tasks SET state = 'pending', standby = 0, deadline = NULL, run_until = NULL, reserved_usd = 0, reserved_tokens = 0 WHERE id = ?",
      task.id,
    );
    this.totals.move(task.kind, task.state, "pending");
    this.leftStandby(task);
    if (IN_FLIGHT_TASK_STATES.includes(task.state)) this.totals.reserve({ usd: -task.reserved_usd, tokens: -task.reserved_tokens });
  }

  /** A standby task left it (it ended, went back, or its lease ran out): one fewer outside the window. */
  private leftStandby(task: TaskRow): void {
    if (task.state === "running" && task.standby === 1) this.totals.standbyMoved(-1);
  }

  /** The tasks of an earlier grant still held under it (running, same attempt), with their lease as it now stands. */
  stillLeased(granted: readonly ClaimedTask[]): ClaimedTask[] {
    return granted.flatMap((task) => {
      const row = this.store.task(task.taskId);
      if (row === null || row.state !== "running" || row.attempts !== task.attempt || row.deadline === null) return [];
      return [{ ...task, leaseUntil: row.deadline }];
    });
  }

  /**
   * A lane's heartbeat: the leases of its running tasks last `leaseMs` more, never past their
   * `run_until`. A lapsed lease nobody took over yet is renewed too (the lane is alive after all);
   * a task that is no longer this attempt's (handed out again, or ended) is left alone. Returns the
   * leases renewed.
   */
  renewLeases(renew: readonly { taskId: string; attempt: number }[], now: number, leaseMs: number): { taskId: string; leaseUntil: number }[] {
    const renewed: { taskId: string; leaseUntil: number }[] = [];
    for (const { taskId, attempt } of renew) {
      const row = this.sql
        .exec<{ deadline: number }>(
          `UPDATE tasks SET deadline = MIN(COALESCE(run_until, deadline), ?)
           WHERE id = ? AND state = 'running' AND attempts = ? RETURNING deadline`,
          now + leaseMs,
          taskId,
          attempt,
        )
        .toArray()[0];
      if (row !== undefined) renewed.push({ taskId, leaseUntil: row.deadline });
    }
    return renewed;
  }

  /** When the earliest retry of the pool is due, from now; null when none waits. */
  nextRetryIn(now: number, pool: TaskPool): number | null {
    if (this.totals.inState("retry_wait") === 0) return null;
    const at = this.sql
      .exec<{ at: number | null }>("SELECT MIN(retry_at) AS at FROM tasks WHERE state = 'retry_wait' AND long = ?", pool === "long" ? 1 : 0)
      .one().at;
    return at === null ? null : Math.max(0, at - now);
  }

  /**
   * Leases that ran out (a lane died, or lost its outcome): the task waits to be handed out again at
   * once, or fails on its last attempt, or ends cancelled in a cancelled swarm.
   */
  expireLeases(swarm: SwarmRow, now: number): { taskId: string; attempt: number }[] {
    const limits = this.store.limits(swarm);
    // Leases are held by running tasks only (and by 'dispatched' ones of a swarm started before
    // pull dispatch): tasks_by_state finds them without a scan of the swarm (schema v11).
    const overdue = this.sql.exec<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE state IN ${LEASED_STATES} AND deadline <= ? ORDER BY seq`, now).toArray();
    const expired = overdue.filter((task) => task.state === "running").map((task) => ({ taskId: task.id, attempt: task.attempts }));
    for (const task of overdue) {
      if (swarm.state === "cancelled") {
        this.endTask(task, "cancelled", now, { errorClass: "lease_expired", message: "the swarm was cancelled and no outcome arrived within the lease" });
        continue;
      }
      // Only a running task's attempts can run out here: only then are its given-back ones read.
      const allowed = task.state === "running" ? this.store.attemptsAllowed(task, limits.max_attempts) : null;
      if (allowed !== null && task.attempts >= allowed) {
        this.endTask(task, "failed", now, {
          errorClass: "lease_expired",
          message: `no outcome was reported within the lease of attempt ${task.attempts} of ${allowed}`,
        });
      } else {
        this.toRetryWait(task, now);
      }
    }
    return expired;
  }

  /**
   * The task made `toolCalls` tool calls so far (its count never falls); with `attempt`, only while
   * that attempt holds the task. A count that rises nothing writes nothing.
   */
  raiseToolCalls(taskId: string, toolCalls: number, attempt: number | null = null): void {
    const raised = this.sql.exec(
      "UPDATE tasks SET tool_calls = ?1 WHERE id = ?2 AND tool_calls < ?1 AND (?3 IS NULL OR (state = 'running' AND attempts = ?3))",
      toolCalls,
      taskId,
      attempt,
    ).rowsWritten;
    if (raised > 0) this.totals.toolCallsRaised();
  }

  /** Keeps a multi-turn task's latest checkpoint, from the attempt that holds it only. */
  saveCheckpoint(taskId: string, attempt: number, checkpoint: AgentCheckpoint): void {
    const json = JSON.stringify(checkpoint);
    // A row holds at most 2 MB in Durable Object SQLite ("Maximum string, BLOB or table row size",
    // developers.cloudflare.com/durable-objects/platform/limits), with the task's prompt and output
    // beside it. A larger conversation keeps its previous checkpoint: a redelivery then repeats
    // the turns since, which is paid again but never wrong.
    if (json.length * 3 > CHECKPOINT_MAX_BYTES && new TextEncoder().encode(json).length > CHECKPOINT_MAX_BYTES) {
      console.warn(JSON.stringify({ event: "checkpoint_too_large", task_id: taskId, attempt, turns: checkpoint.turns, chars: json.length }));
      this.raiseToolCalls(taskId, checkpoint.toolCalls, attempt);
      return;
    }
    const saved = this.sql.exec(
      `UPDATE tasks SET checkpoint = ?, tool_calls = MAX(tool_calls, ?) WHERE id = ? AND state = 'running' AND attempts = ?
         AND (checkpoint IS NULL OR json_extract(checkpoint, '$.step') < ?)`,
      json,
      checkpoint.toolCalls,
      taskId,
      attempt,
      checkpoint.step,
    ).rowsWritten;
    if (saved > 0 && checkpoint.toolCalls > 0) this.totals.toolCallsRaised();
  }

  endTask(
    task: TaskRow,
    state: "succeeded" | "failed" | "cancelled" | "skipped",
    now: number,
    detail: { output: string; finishReason: string | null } | { errorClass: ErrorClass | null; message: string; output?: string | null },
  ): void {
    if ("finishReason" in detail) {
      this.sql.exec(
        `UPDATE tasks SET state = ?, output = ?, finish_reason = ?, error_class = NULL, error_message = NULL,
           deadline = NULL, retry_at = NULL, reserved_usd = 0, reserved_tokens = 0, checkpoint = NULL, standby = 0, finished_at = ? WHERE id = ?`,
        state,
        detail.output,
        detail.finishReason,
        now,
        task.id,
      );
    } else {
      // A failed task keeps its raw answer when it had one (invalid_output).
      this.sql.exec(
        `UPDATE tasks SET state = ?, error_class = ?, error_message = ?, output = COALESCE(?, output), deadline = NULL, retry_at = NULL,
           reserved_usd = 0, reserved_tokens = 0, checkpoint = NULL, standby = 0, finished_at = ? WHERE id = ?`,
        state,
        detail.errorClass,
        detail.message,
        detail.output ?? null,
        now,
        task.id,
      );
    }
    this.totals.move(task.kind, task.state, state);
    this.leftStandby(task);
    if (IN_FLIGHT_TASK_STATES.includes(task.state)) this.totals.reserve({ usd: -task.reserved_usd, tokens: -task.reserved_tokens });
  }

  /** The swarm was cancelled: every task not running ends `cancelled` (running ones finish and are recorded). */
  cancelWaiting(now: number): void {
    this.sql.exec(
      `UPDATE tasks SET state = 'cancelled', deadline = NULL, retry_at = NULL, reserved_usd = 0, reserved_tokens = 0, finished_at = ?
       WHERE state IN ('pending', 'dispatched', 'retry_wait')`,
      now,
    );
    this.totals.invalidate();
  }

  /** Notes a lease or deadline the alarm must look at. */
  noteDeadline(at: number): void {
    if (this.nextDeadline === null || at < this.nextDeadline) this.nextDeadline = at;
  }

  /** The alarm runs: it looks at every lease, so what was noted for it is done with. */
  forgetNoted(): void {
    this.nextDeadline = null;
  }

  /**
   * When the alarm must next look at a lease: the earliest noted since it last ran; with `exact`
   * (the alarm planning its next run) the earliest stored, read once.
   */
  nextAlarm(options: { exact: boolean }): number | null {
    if (options.exact) {
      const next = this.sql.exec<{ at: number | null }>(`SELECT MIN(deadline) AS at FROM tasks WHERE state IN ${LEASED_STATES}`).one().at;
      if (next !== null) this.noteDeadline(next);
    }
    return this.nextDeadline;
  }
}
