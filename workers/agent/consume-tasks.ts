// The task-queue handler (short and long queues alike): runs each swarm's tasks in rounds (one claim
// and one record RPC per swarm per round, see run-swarm-rounds.ts; calls are journaled as they end),
// then acks or retries each message as the SwarmRoom said. It never acks an unrecorded outcome.
import { DEFAULT_TOOL_SETTINGS, toToolEnvironment, type ToolEnvironment } from "./tools/swarm-tools.ts";
import type { ModelGateway } from "./call-with-permit.ts";
import { createCallJournal } from "./call-journal.ts";
import type { Schedule } from "./call-journal.ts";
import { createLimiter } from "./create-limiter.ts";
import { groupPackets } from "./group-packets.ts";
import { DEFAULT_INLINE_BUDGET } from "./inline-budget.ts";
import type { InlineBudget } from "./inline-budget.ts";
import { runSwarmRounds } from "./run-swarm-rounds.ts";
import type { RoundsContext, Tally } from "./run-swarm-rounds.ts";
import { ackSettledMessages, settleMessages } from "./settle-messages.ts";
import type { TaskFate } from "./settle-messages.ts";
import type { SwarmRooms } from "./swarm-rooms.ts";

export interface ConsumeTasksDeps {
  rooms: SwarmRooms;
  gateway: ModelGateway;
  /** Model calls in flight at once, across the whole batch. */
  concurrency: number;
  /** What the agents' tools reach besides the scratchpad (default: the global fetch, no webhook secret). */
  tools?: Omit<ToolEnvironment, "scratchpad">;
  /** A retry the SwarmRoom delays by at most this many seconds is re-run inside the invocation. */
  inlineRetryMaxS: number;
  /** Bounds on inline rounds; tests pass tighter ones. */
  inlineBudget?: InlineBudget;
  /** Waits before an inline round and between recordResults attempts; tests pass a fast one. */
  sleep?: (ms: number) => Promise<void>;
  /** Epoch ms; tests pass a fake clock. */
  now?: () => number;
  /** Jitter of permit waits, in [0, 1). */
  random?: () => number;
  /** The call journal's flush timer (default setTimeout); tests drive it with a fake clock. */
  schedule?: Schedule;
}

export async function consumeTasks(batch: MessageBatch<unknown>, deps: ConsumeTasksDeps): Promise<void> {
  const now = deps.now ?? Date.now;
  const started = now();
  const tally: Tally = {
    granted: 0,
    refused: 0,
    ok: 0,
    failed: 0,
    deferred: 0,
    threw: 0,
    inlineRounds: 0,
    inlineRetries: 0,
    inlineDeclined: 0,
    acked: 0,
    retried: 0,
    errors: {},
    permitWaits: 0,
    permitWaitMs: 0,
    keyPoolErrors: 0,
    callFlushes: 0,
    callFlushErrors: 0,
  };
  const { swarms, unreadable } = groupPackets(batch);

  // Tasks beyond the concurrency wait for a slot, so a lease must cover every round of calls of
  // the batch. No round of any swarm has more tasks waiting than the batch has, so this bounds
  // the inline rounds too.
  const taskCount = swarms.reduce((n, s) => n + s.taskIds.length, 0);
  const budget = deps.inlineBudget ?? DEFAULT_INLINE_BUDGET;
  const wait = deps.sleep ?? sleep;
  const journal = createCallJournal({ rooms: deps.rooms, ...(deps.schedule === undefined ? {} : { schedule: deps.schedule }), tally });
  const context: RoundsContext = {
    rooms: deps.rooms,
    permits: {
      gateway: deps.gateway,
      denials: new Map(),
      // A permit wait may not push a call past the point where the batch's calls must be over.
      callsEndBy: started + budget.endWithinMs,
      now,
      sleep: wait,
      random: deps.random ?? Math.random,
      tally,
    },
    limiter: createLimiter(deps.concurrency),
    journal,
    tools: deps.tools ?? toToolEnvironment(DEFAULT_TOOL_SETTINGS, fetch),
    waves: Math.max(1, Math.ceil(taskCount / deps.concurrency)),
    inlineRetryMaxS: deps.inlineRetryMaxS,
    budget,
    batchStartedAt: started,
    now,
    sleep: wait,
    tally,
  };

  // Swarms run side by side; a message is acked as soon as all its tasks are settled and the rest
  // once their swarm's last round is recorded, so short retries never hold back other acks.
  try {
    await Promise.all(
      swarms.map(async (packets) => {
        const fates = new Map<string, TaskFate>();
        let open = packets.messages;
        try {
          await runSwarmRounds(packets, context, fates, () => {
            // Messages whose tasks are all done are acked now, not after the inline rounds.
            open = ackSettledMessages(open, fates, tally);
          });
        } catch (error) {
          // A bug, not an upstream failure: what was recorded stays settled, the rest is retried.
          console.error(
            JSON.stringify({ event: "swarm_rounds_threw", swarm_id: packets.swarmId, error: error instanceof Error ? error.message : String(error) }),
          );
        }
        settleMessages(open, fates, tally);
      }),
    );
  } finally {
    // Its last flush, and no timer left to outlive the batch.
    await journal.stop();
  }

  console.log(
    JSON.stringify({
      event: "task_batch",
      queue: batch.queue,
      messages: batch.messages.length,
      unreadable,
      swarms: swarms.length,
      ...tally,
      ms: now() - started,
    }),
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
