// A lane's standby tasks (src/core/standby.ts): granted outside the window and held, each started
// the moment one of the lane's tasks ends for good, in its place, so no freed slot waits for a
// pull's round trip. What it holds, the ones it started in ended ones' places (the room moves them
// into the window: PullRequest.promoted) and the ones it hands back unstarted (`released`), each
// listed until a pull carrying it is answered. No I/O.
import type { ClaimedTask, PullRequest } from "../../src/core/swarm-contract.ts";

/** A held task and what it runs with (the lane's TaskRunConfig when it was granted). */
export interface HeldTask<Run> {
  task: ClaimedTask;
  run: Run;
}

export interface LaneStandby<Run> {
  /** Standby tasks held now. */
  size(): number;
  /** Standby tasks handed back and not yet confirmed by an answer. */
  releasing(): number;
  /** A standby task granted: held until one of the lane's tasks ends, or the window takes it. */
  hold(task: HeldTask<Run>): void;
  /** The next held task, to start at `now` in the place of an ended one (the room hears it with the next pull). */
  promoteNext(now: number): HeldTask<Run> | undefined;
  /** Takes a held task out (to start it, the window having room, or because it is no longer the lane's). */
  take(taskId: string): HeldTask<Run> | undefined;
  /** Every held task goes back unstarted with the next pull; returns them. */
  releaseAll(): ClaimedTask[];
  /** What a pull tells the room of them. */
  pullFields(): Pick<PullRequest, "promoted" | "released" | "held">;
  /** The room answered a pull that carried `request`'s lists: they need listing no more. */
  answered(request: Pick<PullRequest, "promoted" | "released">): void;
}

type Attempt = { taskId: string; attempt: number };

const attemptOf = (task: ClaimedTask): Attempt => ({ taskId: task.taskId, attempt: task.attempt });

export function createLaneStandby<Run>(): LaneStandby<Run> {
  const held: HeldTask<Run>[] = [];
  const promoted = new Map<string, Attempt & { startedAt: number }>();
  const releasing = new Map<string, Attempt>();
  return {
    size: () => held.length,
    releasing: () => releasing.size,
    hold(task) {
      held.push(task);
    },
    promoteNext(now) {
      const next = held.shift();
      if (next !== undefined) promoted.set(next.task.taskId, { ...attemptOf(next.task), startedAt: now });
      return next;
    },
    take(taskId) {
      const index = held.findIndex(({ task }) => task.taskId === taskId);
      return index < 0 ? undefined : held.splice(index, 1)[0];
    },
    releaseAll() {
      const released = held.splice(0).map(({ task }) => task);
      for (const task of released) releasing.set(task.taskId, attemptOf(task));
      return released;
    },
    pullFields: () => ({
      ...(promoted.size > 0 ? { promoted: [...promoted.values()] } : {}),
      ...(releasing.size > 0 ? { released: [...releasing.values()] } : {}),
      ...(held.length > 0 ? { held: held.map(({ task }) => attemptOf(task)) } : {}),
    }),
    answered(request) {
      for (const { taskId } of request.promoted ?? []) promoted.delete(taskId);
      for (const { taskId } of request.released ?? []) releasing.delete(taskId);
    },
  };
}
