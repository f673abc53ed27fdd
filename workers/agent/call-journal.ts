// The invocation's call journal: each model call is sent to its SwarmRoom within a bounded time of
// ending, by the lane's next pull or else by a recordCalls of its own, so an invocation that dies
// mid-batch loses the exact usage of at most that much (those calls, noted before they were sent,
// are still billed, at their estimate).
import { holdsOnlyFirstAnswer } from "../../src/core/agent-conversation.ts";
import type { AgentCheckpoint, CallRecord, CallsReport, TaskReport } from "../../src/core/swarm-contract.ts";
import type { SwarmRoomRpc, SwarmRooms } from "./swarm-rooms.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";

/**
 * A swarm's journal flushes this long after its oldest unsent call ended (longer when its lane's
 * pulls come less often: flushAfterMs), or after its previous flush answered if that is later:
 * never more often, and never more than one RPC in flight. It
 * bounds what a crash (a deploy, a `wrangler dev` reload) loses from the ledger to the calls of the
 * last ~250 ms, or of the lane's longer wait (plus one RPC in flight), while keeping the SwarmRoom's load at ≤ 4 recordCalls/s
 * per invocation and swarm instead of one RPC per call (a DO takes ~500–1,000 RPCs/s in all).
 */
export const CALL_FLUSH_MS = 250;

/** Runs `run` after `ms`; returns a function that cancels it. Tests pass one driven by a fake clock. */
export type Schedule = (run: () => void, ms: number) => () => void;

/** The calls of one task attempt, as recordCalls and recordResults take them. */
export type CallReport = Pick<TaskReport, "taskId" | "attempt" | "calls">;

export interface JournalTally {
  /** recordCalls RPCs that answered, and those that threw (their calls are sent again). */
  callFlushes: number;
  callFlushErrors: number;
}

export interface CallJournal {
  /** A call ended: it goes to the swarm's SwarmRoom with the next flush. Never blocks. */
  append(swarmId: string, report: CallReport): void;
  /**
   * A multi-turn task finished a turn: its checkpoint goes with the next flush (only the latest of
   * an attempt is sent). Never blocks.
   */
  checkpoint(swarmId: string, taskId: string, attempt: number, checkpoint: AgentCheckpoint): void;
  /**
   * Runs the swarm's recordResults, which carries these calls itself: the journal holds them back
   * while it runs (no RPC races its own record), forgets them once it answers, and takes them back
   * if it throws, so they still reach the ledger if no record ever does. Rethrows its error.
   */
  carry<T>(swarmId: string, reports: readonly CallReport[], record: () => Promise<T>): Promise<T>;
  /** The batch is over: cancels the timers and flushes what is left, once (failures are logged). */
  stop(): Promise<void>;
}

export interface CallJournalDeps {
  rooms: SwarmRooms;
  schedule?: Schedule;
  /** The clock the schedule runs on (default Date.now): a flush's wait is re-read when its timer fires. */
  now?: () => number;
  /**
   * How long after its oldest unsent call a flush waits (default CALL_FLUSH_MS). A lane that the
   * room paces pulls slower than that (PullResponse.paceMs) raises it to its pace, so its pulls
   * carry its calls instead of a recordCalls each: every call is noted before it is sent, so a
   * crash in between still bills it (at its estimate), never loses it.
   */
  flushAfterMs?: () => number;
  tally: JournalTally;
}

interface PendingCall {
  taskId: string;
  attempt: number;
  call: CallRecord;
}

interface PendingCheckpoint {
  taskId: string;
  attempt: number;
  checkpoint: AgentCheckpoint;
}

interface SwarmJournal {
  swarmId: string;
  room: SwarmRoomRpc;
  /** Unsent calls by call key (task:attempt:turn), in the order they ended. */
  pending: Map<string, PendingCall>;
  /** Calls a recordResults is carrying or has recorded: never sent (or re-queued) by the journal. */
  carried: Set<string>;
  /** Calls a recordCalls took: never sent twice, even when a record that failed hands them back. */
  sent: Set<string>;
  /** Unsent checkpoints by task:attempt (the latest one only). */
  checkpoints: Map<string, PendingCheckpoint>;
  cancelTimer: (() => void) | null;
  /** When the timer was armed for the oldest unsent call. */
  armedAt: number;
  flushing: Promise<void> | null;
}

export function createCallJournal(deps: CallJournalDeps): CallJournal {
  const schedule = deps.schedule ?? scheduleWithTimers;
  const flushAfterMs = deps.flushAfterMs ?? (() => CALL_FLUSH_MS);
  const now = deps.now ?? Date.now;
  const swarms = new Map<string, SwarmJournal>();
  let stopped = false;

  function journalOf(swarmId: string): SwarmJournal {
    let journal = swarms.get(swarmId);
    if (journal === undefined) {
      journal = {
        swarmId,
        room: deps.rooms(swarmId),
        pending: new Map(),
        carried: new Set(),
        sent: new Set(),
        checkpoints: new Map(),
        cancelTimer: null,
        armedAt: 0,
        flushing: null,
      };
      swarms.set(swarmId, journal);
    }
    return journal;
  }

  function add(journal: SwarmJournal, report: CallReport): void {
    for (const call of report.calls) {
      const key = callKey(report.taskId, report.attempt, call.turn);
      if (!journal.carried.has(key) && !journal.sent.has(key)) journal.pending.set(key, { taskId: report.taskId, attempt: report.attempt, call });
    }
  }

  /**
   * Arms the swarm's one timer when it has unsent calls and none is armed or in flight: called when
   * a call is added (so from the oldest unsent one) and when a flush answers (so flushes of a swarm
   * start ≥ CALL_FLUSH_MS apart).
   */
  function arm(journal: SwarmJournal): void {
    if (stopped || journal.cancelTimer !== null || journal.flushing !== null || (journal.pending.size === 0 && journal.checkpoints.size === 0)) return;
    journal.armedAt = now();
    wait(journal, flushAfterMs());
  }

  /**
   * The wait is read again when the timer fires: it grows when the lane's pulls come less often
   * (its outcomes wait longer for company), and the calls then wait for the pull that carries them.
   */
  function wait(journal: SwarmJournal, ms: number): void {
    journal.cancelTimer = schedule(() => {
      journal.cancelTimer = null;
      const left = journal.armedAt + flushAfterMs() - now();
      if (left > 0) wait(journal, left);
      else void flush(journal);
    }, ms);
  }

  function disarm(journal: SwarmJournal): void {
    journal.cancelTimer?.();
    journal.cancelTimer = null;
  }

  /** Sends every unsent call in one recordCalls; never throws. At most one per swarm is in flight. */
  function flush(journal: SwarmJournal): Promise<void> {
    if (journal.flushing !== null) return journal.flushing;
    const calls = [...journal.pending.entries()];
    const checkpoints = [...journal.checkpoints.values()];
    if (calls.length === 0 && checkpoints.length === 0) return Promise.resolve();
    journal.pending.clear();
    journal.checkpoints.clear();
    // `finally` runs after the assignment even if recordCalls throws synchronously.
    journal.flushing = send(journal, calls, checkpoints).finally(() => {
      journal.flushing = null;
      arm(journal);
    });
    return journal.flushing;
  }

  async function send(journal: SwarmJournal, calls: [string, PendingCall][], checkpoints: PendingCheckpoint[]): Promise<void> {
    try {
      await journal.room.recordCalls(
        toReports(
          calls.map(([, pending]) => pending),
          checkpoints,
        ),
      );
      deps.tally.callFlushes += 1;
      for (const [key] of calls) journal.sent.add(key);
    } catch (error) {
      deps.tally.callFlushErrors += 1;
      // Back in the queue for the next tick, unless a recordResults took them meanwhile.
      const requeued = calls.filter(([key]) => !journal.carried.has(key));
      journal.pending = new Map([...requeued, ...journal.pending]);
      // A checkpoint that failed goes again, unless a newer one of the attempt is waiting.
      for (const c of checkpoints) {
        const key = attemptKey(c);
        if (!journal.checkpoints.has(key)) journal.checkpoints.set(key, c);
      }
      console.error(
        JSON.stringify({
          event: "call_journal_flush_failed",
          swarm_id: journal.swarmId,
          calls: requeued.length,
          final: stopped,
          error: toErrorMessage(error),
        }),
      );
    }
  }

  return {
    append(swarmId, report) {
      // Never fatal to the task: its record still carries the call.
      try {
        const journal = journalOf(swarmId);
        add(journal, report);
        arm(journal);
      } catch (error) {
        console.error(JSON.stringify({ event: "call_journal_append_failed", swarm_id: swarmId, task_id: report.taskId, error: toErrorMessage(error) }));
      }
    },

    checkpoint(swarmId, taskId, attempt, checkpoint) {
      try {
        const journal = journalOf(swarmId);
        journal.checkpoints.set(attemptKey({ taskId, attempt }), { taskId, attempt, checkpoint });
        arm(journal);
      } catch (error) {
        console.error(JSON.stringify({ event: "call_journal_checkpoint_failed", swarm_id: swarmId, task_id: taskId, error: toErrorMessage(error) }));
      }
    },

    async carry(swarmId, reports, record) {
      const journal = journalOf(swarmId);
      const keys = reports.flatMap((r) => r.calls.map((call) => callKey(r.taskId, r.attempt, call.turn)));
      for (const key of keys) {
        journal.pending.delete(key);
        journal.carried.add(key);
      }
      // A one-turn task's answer, checkpointed with its call, is moot once the outcome goes: it is
      // sent only if a flush comes first. Any other checkpoint still goes (the room's transcript of
      // a multi-turn task, and its MCP calls, are made from them).
      const dropped: PendingCheckpoint[] = [];
      for (const report of reports) {
        const key = attemptKey(report);
        const waiting = journal.checkpoints.get(key);
        if (waiting === undefined || !holdsOnlyFirstAnswer(waiting.checkpoint)) continue;
        dropped.push(waiting);
        journal.checkpoints.delete(key);
      }
      // The timer was armed for the oldest unsent call, which this record now carries: the calls
      // left (ended while its outcome was still on its way) get a wait of their own, so the next
      // pull, not a recordCalls of their own, carries them.
      disarm(journal);
      arm(journal);
      try {
        return await record();
      } catch (error) {
        for (const key of keys) journal.carried.delete(key);
        for (const report of reports) add(journal, report);
        // The calls go again with the journal: so do their checkpoints, unless newer ones wait.
        for (const checkpoint of dropped) {
          const key = attemptKey(checkpoint);
          if (!journal.checkpoints.has(key)) journal.checkpoints.set(key, checkpoint);
        }
        arm(journal);
        throw error;
      }
    },

    async stop() {
      stopped = true;
      for (const journal of swarms.values()) disarm(journal);
      await Promise.all(
        [...swarms.values()].map(async (journal) => {
          if (journal.flushing !== null) await journal.flushing;
          await flush(journal);
          if (journal.pending.size > 0) {
            console.error(JSON.stringify({ event: "call_journal_calls_unsent", swarm_id: journal.swarmId, calls: journal.pending.size }));
          }
        }),
      );
    },
  };
}

/** The ledger's call id without the swarm (a journal, a lane, is per swarm). */
export function callKey(taskId: string, attempt: number, turn: number): string {
  return `${taskId}:${attempt}:${turn}`;
}

/** A task attempt's key in a journal's or a lane's maps (`task:attempt`, callKey without the turn). */
export function attemptKey(of: { taskId: string; attempt: number }): string {
  return `${of.taskId}:${of.attempt}`;
}

function toReports(calls: PendingCall[], checkpoints: readonly PendingCheckpoint[]): CallsReport[] {
  const byAttempt = new Map<string, CallsReport>();
  for (const { taskId, attempt, call } of calls) {
    const key = attemptKey({ taskId, attempt });
    const report = byAttempt.get(key);
    if (report === undefined) byAttempt.set(key, { taskId, attempt, calls: [call] });
    else report.calls.push(call);
  }
  for (const { taskId, attempt, checkpoint } of checkpoints) {
    const key = attemptKey({ taskId, attempt });
    const report = byAttempt.get(key);
    if (report === undefined) byAttempt.set(key, { taskId, attempt, calls: [], checkpoint });
    else report.checkpoint = checkpoint;
  }
  return [...byAttempt.values()];
}

function scheduleWithTimers(run: () => void, ms: number): () => void {
  const handle = setTimeout(run, ms);
  return () => clearTimeout(handle);
}
