// A lane's heartbeats: the lease of each task it holds (running, or waiting as standby), renewed
// by a pull when half of it is left (the room says how long a lease is, PullResponse.leaseMs), so
// the room notices in seconds when the lane dies. A lease already at its task's run bound cannot
// grow: it needs no heartbeat. No I/O: the pull loop asks which leases are due and tells it what
// the room renewed.
import type { ClaimedTask, PullRequest, PullResponse } from "../../src/core/swarm-contract.ts";

export interface LaneLeases {
  /** The lease of a granted task, renewed by the lane's heartbeats from now on. */
  hold(task: ClaimedTask): void;
  /** Whether the lane holds this attempt's lease (a standby task's may have been renewed while it waited). */
  holds(task: { taskId: string; attempt: number }): boolean;
  /** The task is no longer the lane's (it ended, or went back). */
  drop(taskId: string): void;
  /** The lease length the room answered with (ms), if it said. */
  setLeaseMs(ms: number | undefined): void;
  /** When the earliest lease is due for renewal (epoch ms; null: none is, or no lease length known yet). */
  renewAt(): number | null;
  /** The leases due for renewal at `now`: those with half their length left or less. */
  due(now: number): PullRequest["renew"];
  /**
   * The room's answer to the pull that asked to renew `asked`: new ends kept (the newer one), and
   * the tasks not renewed dropped (handed out again: no longer this lane's). Returns those task ids.
   */
  renewed(asked: PullRequest["renew"], answer: PullResponse["renewed"]): string[];
}

export function createLaneLeases(): LaneLeases {
  const leases = new Map<string, { attempt: number; until: number; runUntil: number }>();
  let leaseMs: number | null = null;
  const renewable = (lease: { until: number; runUntil: number }): boolean => lease.until < lease.runUntil;
  return {
    hold(task) {
      leases.set(task.taskId, { attempt: task.attempt, until: task.leaseUntil, runUntil: task.runUntil });
    },
    holds: (task) => leases.get(task.taskId)?.attempt === task.attempt,
    drop(taskId) {
      leases.delete(taskId);
    },
    setLeaseMs(ms) {
      if (ms !== undefined) leaseMs = ms;
    },
    renewAt() {
      if (leaseMs === null) return null;
      let earliest: number | null = null;
      for (const lease of leases.values()) if (renewable(lease)) earliest = Math.min(earliest ?? lease.until, lease.until);
      return earliest === null ? null : earliest - leaseMs / 2;
    },
    due(now) {
      if (leaseMs === null) return undefined;
      const half = leaseMs / 2;
      const due: NonNullable<PullRequest["renew"]> = [];
      for (const [taskId, lease] of leases) if (renewable(lease) && lease.until - now <= half) due.push({ taskId, attempt: lease.attempt });
      return due.length === 0 ? undefined : due;
    },
    renewed(asked, answer) {
      const ends = new Map((answer ?? []).map((lease) => [lease.taskId, lease.leaseUntil]));
      const lost: string[] = [];
      for (const { taskId } of asked ?? []) {
        const until = ends.get(taskId);
        const held = leases.get(taskId);
        if (until === undefined) {
          leases.delete(taskId);
          lost.push(taskId);
        } else if (held !== undefined) held.until = until;
      }
      return lost;
    },
  };
}
