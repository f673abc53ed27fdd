// Fail fast (limits.stop_after_failures): the swarm's run of the same permanent failure, kept in
// the swarm row, and the stop it makes — no sub-task is handed out any more and those not yet run
// end `skipped`, while running ones finish and are recorded. The rule is core/failure-streak.ts;
// this never grants a task and never decides an outcome.
import { noteTaskEnd, parseFailureStreak, toRunInFlightCap, toStreakReason, type FailureStreak, type TaskEnd } from "../core/failure-streak.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";
import type { SwarmStore } from "./swarm-store.ts";
import type { SwarmTotals } from "./swarm-totals.ts";

export class SwarmFailFast {
  /** The last stored streak parsed, by its JSON (it changes only when a sub-task ends). */
  private memo: { json: string | null; streak: FailureStreak } | null = null;

  constructor(
    private readonly sql: SqlStorage,
    private readonly store: SwarmStore,
    private readonly totals: SwarmTotals,
  ) {}

  /** Whether a run of failures stopped the swarm's dispatch. */
  stopped(swarm: SwarmRow): boolean {
    return this.streakOf(swarm).stopped;
  }

  /** How many tasks may be in flight while a run nears the limit (null: no bound; toRunInFlightCap). */
  inFlightCap(swarm: SwarmRow): number | null {
    return toRunInFlightCap(this.streakOf(swarm), this.store.limits(swarm).stop_after_failures);
  }

  /**
   * Sub-tasks ended, in the order recorded: the run grows or ends. When it reaches the limit the
   * swarm stops (its reason says why) and the waiting sub-tasks are skipped; returns whether it did.
   */
  noteEnds(swarm: SwarmRow, ends: readonly TaskEnd[], now: number): boolean {
    if (ends.length === 0) return false;
    const before = this.streakOf(swarm);
    if (before.stopped) return false;
    const limit = this.store.limits(swarm).stop_after_failures;
    const after = ends.reduce((streak, end) => noteTaskEnd(streak, end, limit), before);
    if (after.count === before.count && after.errorClass === before.errorClass) return false;
    const json = JSON.stringify(after);
    if (!after.stopped) {
      this.sql.exec("UPDATE swarm SET failure_streak = ?", json);
      return false;
    }
    this.sql.exec("UPDATE swarm SET failure_streak = ?, reason = COALESCE(reason, ?), index_dirty = 1", json, toStreakReason(after));
    console.warn(JSON.stringify({ event: "fail_fast", swarm_id: swarm.id, error_class: after.errorClass, count: after.count }));
    this.skipWaiting(now);
    return true;
  }

  /**
   * Every sub-task that waits (pending, or for a retry) ends `skipped`. Idempotent: a stopped
   * swarm calls it after each change that could leave one waiting (a retry, a lapsed lease).
   * Standby tasks stay with their lanes, which hand them back unstarted (SwarmDispatch.release).
   */
  skipWaiting(now: number): boolean {
    const cursor = this.sql.exec(
      `UPDATE tasks SET state = 'skipped', deadline = NULL, retry_at = NULL, reserved_usd = 0, reserved_tokens = 0, finished_at = ?
       WHERE kind = 'task' AND state IN ('pending', 'dispatched', 'retry_wait')`,
      now,
    );
    // rowsWritten counts index rows too: only whether it is above 0 is meant here.
    if (cursor.rowsWritten === 0) return false;
    this.totals.invalidate();
    return true;
  }

  private streakOf(swarm: SwarmRow): FailureStreak {
    if (this.memo === null || this.memo.json !== swarm.failure_streak) {
      this.memo = { json: swarm.failure_streak, streak: parseFailureStreak(swarm.failure_streak) };
    }
    return this.memo.streak;
  }
}
