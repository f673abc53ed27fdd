// The SwarmRoom's pull contract as the agent relies on it, as one suite that every implementation
// of SwarmRoomRpc must pass: the real SwarmRoom and the agent tests' FakeRoom alike (so the fake
// cannot drift into a room that lanes would never meet).
import { describe, expect, it } from "vitest";
import type { CallRecord, ClaimedTask, PullRequest, PullResponse, TaskReport } from "../../../src/core/swarm-contract.ts";
import { FILL_MIN_MS } from "../../../src/core/lane-sizing.ts";
import type { SwarmRoomRpc } from "../swarm-rooms.ts";

export interface ContractSetup {
  tasks: number;
  /** Tasks in flight at most (limits.concurrency of the real room). */
  window: number;
  maxAttempts: number;
}

export interface ContractRoom {
  room: SwarmRoomRpc;
  /** The swarm's task ids, in the order the room hands them out. */
  taskIds: string[];
  /** The orchestrator's cancel. */
  cancel(): Promise<void>;
  /** A task's state and attempts as the room keeps them. */
  task(taskId: string): Promise<{ state: string; attempts: number }>;
  /** Ledger rows (model calls) the room holds. */
  calls(): Promise<number>;
}

export interface SwarmRoomContractSubject {
  /** A started swarm of `setup.tasks` tasks whose model calls time out after 1 s. */
  start(setup: ContractSetup): Promise<ContractRoom>;
  /** The room of a swarm that was never started. */
  missing(): SwarmRoomRpc;
}

let ticketCounter = 0;
function newTicket(): string {
  ticketCounter += 1;
  return `contract-${Date.now().toString(36)}-${ticketCounter}`;
}

function pullOf(ticket: string, want: number, reports: TaskReport[] = [], extra: Partial<PullRequest> = {}): PullRequest {
  return { ticket, reports, want, slots: Math.max(1, want), final: false, pool: "short", endBy: null, ...extra };
}

function call(turn = 1): CallRecord {
  return {
    turn,
    model: "mock-1",
    usage: { prompt_tokens: 10, cached_tokens: 0, completion_tokens: 5, reasoning_tokens: 0, total_tokens: 15 },
    latencyMs: 5,
    ttfbMs: 2,
    status: "ok",
    errorClass: null,
    startedAt: Date.now(),
  };
}

function succeeded(task: ClaimedTask): TaskReport {
  return { taskId: task.taskId, attempt: task.attempt, outcome: { kind: "succeeded", output: `done ${task.taskId}`, finishReason: "stop" }, calls: [call()] };
}

function failedRetryable(task: ClaimedTask, retryAfterMs: number): TaskReport {
  return {
    taskId: task.taskId,
    attempt: task.attempt,
    outcome: { kind: "failed", class: "upstream_error", retryable: true, retryAfterMs, message: "502 Bad Gateway" },
    calls: [{ ...call(), usage: null, status: "error", errorClass: "upstream_error" }],
  };
}

const ids = (tasks: readonly ClaimedTask[]): string[] => tasks.map((t) => t.taskId);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Pulls (want 1) until the room hands out something or `withinMs` passes. */
async function pullUntilGranted(room: SwarmRoomRpc, ticket: string, withinMs: number): Promise<PullResponse> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const answer = await room.pull(pullOf(ticket, 1));
    if (answer.granted.length > 0 || Date.now() > deadline) return answer;
    await sleep(100);
  }
}

export function describeSwarmRoomContract(name: string, subject: SwarmRoomContractSubject): void {
  describe(`SwarmRoom pull contract: ${name}`, () => {
    it("grants at most `want` tasks and never more in flight than the window, and sends the run settings", async () => {
      const swarm = await subject.start({ tasks: 5, window: 3, maxAttempts: 3 });
      const ticket = newTicket();

      const first = await swarm.room.pull(pullOf(ticket, 2));
      expect(first.config).not.toBeNull();
      expect(ids(first.granted)).toEqual(swarm.taskIds.slice(0, 2));
      expect(first.granted.map((t) => t.attempt)).toEqual([1, 1]);
      for (const task of first.granted) expect(task.leaseUntil).toBeGreaterThan(Date.now());

      // Window 3: one more fits, whatever the lane wants.
      const second = await swarm.room.pull(pullOf(ticket, 5));
      expect(ids(second.granted)).toEqual(swarm.taskIds.slice(2, 3));
      // The window is full, yet work is waiting: not a stop.
      const third = await swarm.room.pull(pullOf(newTicket(), 5));
      expect(third.granted).toEqual([]);
      expect(third.stop).toBe(false);
      // A pull that wants nothing only records.
      expect((await swarm.room.pull(pullOf(ticket, 0))).granted).toEqual([]);
    });

    it("never grants a task twice while it is leased, to the same ticket or another, pulled at once", async () => {
      const swarm = await subject.start({ tasks: 6, window: 4, maxAttempts: 3 });
      const [a, b] = [newTicket(), newTicket()];
      const answers = await Promise.all([swarm.room.pull(pullOf(a, 3)), swarm.room.pull(pullOf(b, 3)), swarm.room.pull(pullOf(a, 3))]);
      const granted = answers.flatMap((answer) => answer.granted);
      expect(granted).toHaveLength(4);
      expect(new Set(ids(granted)).size).toBe(4);

      // One ends: its place goes to a task nobody holds, never to a leased one.
      const [done] = granted;
      if (done === undefined) throw new Error("nothing granted");
      const after = await swarm.room.pull(pullOf(b, 3, [succeeded(done)]));
      expect(ids(after.granted)).toHaveLength(1);
      expect(ids(granted)).not.toContain(after.granted[0]?.taskId);
      const again = await swarm.room.pull(pullOf(a, 6));
      expect(again.granted).toEqual([]);
    });

    it("records a report once: a repeat (in the same pull or a later one) changes nothing and is acked", async () => {
      const swarm = await subject.start({ tasks: 2, window: 2, maxAttempts: 3 });
      const ticket = newTicket();
      const { granted } = await swarm.room.pull(pullOf(ticket, 1));
      const [task] = granted;
      if (task === undefined) throw new Error("nothing granted");
      const report = succeeded(task);

      const first = await swarm.room.pull(pullOf(ticket, 0, [report, report]));
      const second = await swarm.room.pull(pullOf(newTicket(), 0, [report]));
      // A stale failure of the same attempt, after its success, is ignored too.
      const stale = await swarm.room.pull(pullOf(ticket, 0, [failedRetryable(task, 0)]));

      for (const action of [...first.actions, ...second.actions, ...stale.actions])
        expect(action).toEqual({ taskId: task.taskId, action: "ack", delaySeconds: 0 });
      expect(await swarm.task(task.taskId)).toEqual({ state: "succeeded", attempts: 1 });
      expect(await swarm.calls()).toBe(1);
      // Ended tasks are never handed out again: the other one is.
      const next = await swarm.room.pull(pullOf(ticket, 2));
      expect(ids(next.granted)).toEqual([swarm.taskIds[1]]);
    });

    it("keeps a retryable failure waiting and hands it out again, as the next attempt, only once its delay has passed", async () => {
      const swarm = await subject.start({ tasks: 1, window: 1, maxAttempts: 3 });
      const ticket = newTicket();
      const [task] = (await swarm.room.pull(pullOf(ticket, 1))).granted;
      if (task === undefined) throw new Error("nothing granted");
      const reportedAt = Date.now();

      const answer = await swarm.room.pull(pullOf(ticket, 1, [failedRetryable(task, 300)]));

      expect(answer.actions).toEqual([{ taskId: task.taskId, action: "retry", delaySeconds: 1 }]);
      expect(answer.granted).toEqual([]);
      expect(answer.stop).toBe(false);
      expect(answer.retryInMs).toBeGreaterThan(0);
      expect(answer.retryInMs).toBeLessThanOrEqual(1_000);
      expect((await swarm.task(task.taskId)).state).toBe("retry_wait");
      const retried = await pullUntilGranted(swarm.room, newTicket(), 3_000);
      expect(Date.now() - reportedAt).toBeGreaterThanOrEqual(300);
      expect(retried.granted.map((t) => [t.taskId, t.attempt])).toEqual([[task.taskId, 2]]);
    });

    it("keeps a deferred attempt (no call made) waiting for its delay; it comes back under a new number and does not use up max_attempts", async () => {
      const swarm = await subject.start({ tasks: 1, window: 1, maxAttempts: 1 });
      const ticket = newTicket();
      const [task] = (await swarm.room.pull(pullOf(ticket, 1))).granted;
      if (task === undefined) throw new Error("nothing granted");
      const deferral: TaskReport = {
        taskId: task.taskId,
        attempt: task.attempt,
        outcome: { kind: "deferred", retryAfterMs: 300, reason: "no key had a permit" },
        calls: [],
      };

      const answer = await swarm.room.pull(pullOf(ticket, 1, [deferral]));
      // Repeated, the deferral gets the same answer.
      const again = await swarm.room.pull(pullOf(ticket, 0, [deferral]));

      expect(answer.actions).toEqual([{ taskId: task.taskId, action: "retry", delaySeconds: 1 }]);
      expect(again.actions).toEqual(answer.actions);
      expect(answer.granted).toEqual([]);
      expect((await swarm.task(task.taskId)).state).toBe("retry_wait");
      const retried = await pullUntilGranted(swarm.room, newTicket(), 3_000);
      const [next] = retried.granted;
      if (next === undefined) throw new Error("the deferred task was not handed out again");
      expect(next.taskId).toBe(task.taskId);
      // Never the same number twice: a late report of the deferred attempt cannot pass for this one.
      expect(next.attempt).toBeGreaterThan(task.attempt);
      await swarm.room.pull(pullOf(ticket, 0, [succeeded(next)]));
      expect((await swarm.task(task.taskId)).state).toBe("succeeded");
      expect(await swarm.calls()).toBe(1);
    });

    it("hands a leased task out again once its lease ran out with no outcome, as the next attempt", async () => {
      const swarm = await subject.start({ tasks: 1, window: 1, maxAttempts: 3 });
      const [task] = (await swarm.room.pull(pullOf(newTicket(), 1))).granted;
      if (task === undefined) throw new Error("nothing granted");
      expect((await swarm.room.pull(pullOf(newTicket(), 1))).granted).toEqual([]);

      await sleep(Math.max(0, task.leaseUntil - Date.now()));
      const again = await pullUntilGranted(swarm.room, newTicket(), 5_000);

      expect(again.granted.map((t) => [t.taskId, t.attempt])).toEqual([[task.taskId, 2]]);
      // The late outcome of the first attempt still counts (it was paid for); the second is then stale.
      const [second] = again.granted;
      if (second === undefined) throw new Error("nothing granted");
      await swarm.room.pull(pullOf(newTicket(), 0, [succeeded(task)]));
      await swarm.room.pull(pullOf(newTicket(), 0, [succeeded(second)]));
      expect((await swarm.task(task.taskId)).state).toBe("succeeded");
      expect(await swarm.calls()).toBe(2);
    });

    it("keeps the checkpoint a recordCalls brings for the attempt that runs, and hands the task's next attempt it once the lease ran out", async () => {
      const swarm = await subject.start({ tasks: 1, window: 1, maxAttempts: 3 });
      const [task] = (await swarm.room.pull(pullOf(newTicket(), 1))).granted;
      if (task === undefined) throw new Error("nothing granted");
      expect(task.checkpoint).toBeNull();
      // The task's answer, checkpointed with its call; its outcome never came.
      const checkpoint = {
        step: 2,
        turns: 1,
        toolCalls: 0,
        repairs: 0,
        messages_json: JSON.stringify([{ role: "user", content: "p" }]),
        answer_json: JSON.stringify({ text: "42", finishReason: "stop", toolCallsOnly: false }),
      };
      await swarm.room.recordCalls([{ taskId: task.taskId, attempt: task.attempt, calls: [call()], checkpoint }]);

      await sleep(Math.max(0, task.leaseUntil - Date.now()));
      const again = await pullUntilGranted(swarm.room, newTicket(), 5_000);
      expect(again.granted.map((t) => [t.taskId, t.attempt, t.checkpoint])).toEqual([[task.taskId, 2, checkpoint]]);
      expect(await swarm.calls()).toBe(1);
    });

    it("a final pull records its reports and hands out nothing; the tasks it leaves go to the next ticket", async () => {
      const swarm = await subject.start({ tasks: 3, window: 3, maxAttempts: 3 });
      const ticket = newTicket();
      const [task] = (await swarm.room.pull(pullOf(ticket, 1))).granted;
      if (task === undefined) throw new Error("nothing granted");

      const final = await swarm.room.pull(pullOf(ticket, 3, [succeeded(task)], { final: true }));

      expect(final.granted).toEqual([]);
      expect(final.actions).toEqual([{ taskId: task.taskId, action: "ack", delaySeconds: 0 }]);
      expect((await swarm.task(task.taskId)).state).toBe("succeeded");
      const next = await swarm.room.pull(pullOf(newTicket(), 3));
      expect(ids(next.granted)).toEqual(swarm.taskIds.slice(1));
    });

    it("says stop once every task has ended, and when nothing fits before the lane's endBy", async () => {
      const swarm = await subject.start({ tasks: 2, window: 2, maxAttempts: 3 });
      const ticket = newTicket();
      // Calls time out after 1 s: a lane that must end within 0.5 s gets nothing, and is told to stop.
      const tooLate = await swarm.room.pull(pullOf(ticket, 2, [], { endBy: Date.now() + 500 }));
      expect(tooLate.granted).toEqual([]);
      expect(tooLate.stop).toBe(true);

      const { granted } = await swarm.room.pull(pullOf(ticket, 2, [], { endBy: Date.now() + 60_000 }));
      expect(granted).toHaveLength(2);
      const done = await swarm.room.pull(pullOf(ticket, 2, granted.map(succeeded)));
      expect(done.granted).toEqual([]);
      expect(done.stop).toBe(true);
      expect(done.retryInMs).toBeNull();
    });

    it("closes a lane it tells to stop when the lane runs and holds nothing (no final pull needed), and not one that still runs a task", async () => {
      const swarm = await subject.start({ tasks: 2, window: 2, maxAttempts: 3 });
      const first = newTicket();
      const second = newTicket();
      const [a] = (await swarm.room.pull(pullOf(first, 1))).granted;
      const [b] = (await swarm.room.pull(pullOf(second, 1))).granted;
      if (a === undefined || b === undefined) throw new Error("nothing granted");

      // Nothing left to hand out, but the second lane still runs b: it is told to stop, not closed.
      const stillRunning = await swarm.room.pull(pullOf(second, 0, [], { running: 1 }));
      expect(stillRunning.stop).toBe(true);
      expect(stillRunning.closed).toBeUndefined();

      const done = await swarm.room.pull(pullOf(first, 1, [succeeded(a)]));
      expect(done.stop).toBe(true);
      expect(done.closed).toBe(true);
      // A final pull is never answered `closed`: it closes the lane itself.
      const final = await swarm.room.pull(pullOf(second, 0, [succeeded(b)], { final: true }));
      expect(final.closed).toBeUndefined();
    });

    it("after a cancel hands out nothing and says stop, still records a running task's outcome, and ends the rest cancelled", async () => {
      const swarm = await subject.start({ tasks: 3, window: 3, maxAttempts: 3 });
      const ticket = newTicket();
      const [task] = (await swarm.room.pull(pullOf(ticket, 1))).granted;
      if (task === undefined) throw new Error("nothing granted");

      await swarm.cancel();
      const answer = await swarm.room.pull(pullOf(ticket, 3, [succeeded(task)]));

      expect(answer.granted).toEqual([]);
      expect(answer.stop).toBe(true);
      expect(await swarm.task(task.taskId)).toEqual({ state: "succeeded", attempts: 1 });
      for (const other of swarm.taskIds.slice(1)) expect((await swarm.task(other)).state).toBe("cancelled");
    });

    it("grants a named lane standby tasks only once the window is full; they hold no place in it until started in an ended task's place or run into room", async () => {
      const swarm = await subject.start({ tasks: 8, window: 2, maxAttempts: 3 });
      const lane = { ticket: newTicket(), lane: "lane-standby", seq: 1 };
      const named = (want: number, reports: TaskReport[], extra: Partial<PullRequest>): PullRequest => {
        const request = pullOf(lane.ticket, want, reports, { lane: lane.lane, seq: lane.seq, ...extra });
        lane.seq += 1;
        return request;
      };
      // A lane that wants fewer than the window's room gets no standby: the window still has room.
      const partial = await swarm.room.pull(pullOf(newTicket(), 1, [], { lane: "lane-small", seq: 1, standby: 3 }));
      expect(partial.granted.map((t) => t.standby ?? false)).toEqual([false]);

      const first = await swarm.room.pull(named(4, [], { standby: 2 }));
      const windowed = first.granted.filter((t) => t.standby !== true);
      const standby = first.granted.filter((t) => t.standby === true);
      expect(windowed).toHaveLength(1);
      expect(standby).toHaveLength(2);
      expect(first.transfer).toBe(true);
      // Nothing is lost: a standby task is leased like any other, under its own attempt.
      for (const task of standby) expect(await swarm.task(task.taskId)).toEqual({ state: "running", attempts: 1 });
      // The window is full: standby tasks take no place in it, and an unnamed pull gets none.
      expect((await swarm.room.pull(pullOf(newTicket(), 3, [], { standby: 3 }))).granted).toEqual([]);
      // Nor does a named lane that runs nothing: it could start none (nothing of its own ends to
      // make room), and would hand them back and ask again, pull after pull.
      expect((await swarm.room.pull(pullOf(newTicket(), 3, [], { lane: "lane-idle", seq: 1, standby: 3 }))).granted).toEqual([]);
      // A lane that says it runs tasks gets them, window full or not.
      const busy = await swarm.room.pull(pullOf(newTicket(), 0, [], { lane: "lane-busy", seq: 1, standby: 1, running: 2 }));
      expect(busy.granted.map((t) => t.standby)).toEqual([true]);

      const [small] = partial.granted;
      const [s1, s2] = standby;
      if (small === undefined || s1 === undefined || s2 === undefined) throw new Error("nothing granted");
      // The small lane's task ends and one standby task starts in its place: the window stays full.
      await swarm.room.pull(pullOf(newTicket(), 0, [succeeded(small)]));
      const promoted = await swarm.room.pull(named(0, [], { promoted: [{ taskId: s1.taskId, attempt: s1.attempt }] }));
      expect(promoted.transfer).toBe(true);
      expect((await swarm.room.pull(pullOf(newTicket(), 3))).granted).toEqual([]);

      // A windowed task ends with no standby started in its place: the held one runs into the room.
      const [w] = windowed;
      if (w === undefined) throw new Error("nothing granted");
      const ran = await swarm.room.pull(named(3, [succeeded(w)], { held: [{ taskId: s2.taskId, attempt: s2.attempt }] }));
      expect(ran.run).toEqual([{ taskId: s2.taskId, attempt: s2.attempt }]);
      expect(ran.granted.filter((t) => t.standby !== true)).toEqual([]);
      expect((await swarm.room.pull(pullOf(newTicket(), 3))).granted).toEqual([]);
    });

    it("hands a released standby task out again as its next attempt, and ends one released after a cancel cancelled", async () => {
      const swarm = await subject.start({ tasks: 4, window: 1, maxAttempts: 1 });
      const ticket = newTicket();
      const first = await swarm.room.pull(pullOf(ticket, 1, [], { lane: "lane-r", seq: 1, standby: 2 }));
      const [windowed, kept, handedBack] = first.granted;
      if (windowed === undefined || kept === undefined || handedBack === undefined) throw new Error("nothing granted");
      expect([kept.standby, handedBack.standby]).toEqual([true, true]);

      // Handed back unstarted, it waits again — and its attempt, which made no call, is given back:
      // with max_attempts 1 it still runs once more.
      const released = await swarm.room.pull(
        pullOf(ticket, 0, [succeeded(windowed)], { lane: "lane-r", seq: 2, released: [{ taskId: handedBack.taskId, attempt: 1 }] }),
      );
      expect(released.actions).toEqual([{ taskId: windowed.taskId, action: "ack", delaySeconds: 0 }]);
      expect((await swarm.task(handedBack.taskId)).state).toBe("pending");
      const again = await pullUntilGranted(swarm.room, newTicket(), 2_000);
      expect(again.granted.map((t) => [t.taskId, t.attempt])).toEqual([[handedBack.taskId, 2]]);

      await swarm.cancel();
      const after = await swarm.room.pull(pullOf(ticket, 0, [], { lane: "lane-r", seq: 3, released: [{ taskId: kept.taskId, attempt: 1 }] }));
      expect(after.transfer).toBe(false);
      expect(await swarm.task(kept.taskId)).toMatchObject({ state: "cancelled" });
    });

    it("says the swarm is gate-bound in every answer once a lane's first headers took FILL_MIN_MS or more, and not before", async () => {
      const swarm = await subject.start({ tasks: 4, window: 4, maxAttempts: 3 });
      const ticket = newTicket();
      // A swarm started on no prior: the room assumes lanes of 6, but has heard nothing yet.
      expect((await swarm.room.pull(pullOf(ticket, 1))).gateBound).toBeUndefined();
      expect((await swarm.room.pull(pullOf(ticket, 0, [], { running: 1, firstHeadersMs: FILL_MIN_MS - 1 }))).gateBound).toBeUndefined();
      expect((await swarm.room.pull(pullOf(ticket, 0, [], { running: 1, firstHeadersMs: FILL_MIN_MS }))).gateBound).toBe(true);
      // Every lane hears it from then on, one that never said it included.
      expect((await swarm.room.pull(pullOf(newTicket(), 1))).gateBound).toBe(true);
    });

    it("answers a swarm that was never started with no settings, nothing granted and stop", async () => {
      const answer = await subject.missing().pull(pullOf(newTicket(), 4));
      expect(answer).toMatchObject({ config: null, granted: [], stop: true });
    });
  });
}
