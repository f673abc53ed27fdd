// The task-queue handler (short and long queues alike): each message is a ticket, and each ticket
// runs as one lane that pulls its swarm's tasks until the SwarmRoom has none left for it
// (run-lane.ts). A ticket is acked once its lane has ended and recorded what it started.
import type { ModelGateway } from "./call-with-permit.ts";
import { createCallJournal } from "./call-journal.ts";
import { createCallStarts } from "./call-starts.ts";
import type { Schedule } from "./call-journal.ts";
import { runLane, type LaneContext, type LaneTally } from "./run-lane.ts";
import type { SwarmRooms } from "./swarm-rooms.ts";
import { DEFAULT_TOOL_SETTINGS, toToolEnvironment, type ToolEnvironment } from "./tools/swarm-tools.ts";
import { backoffDelayMs, toQueueDelaySeconds } from "../../src/core/retry-policy.ts";
import { toTicket, type Ticket } from "../../src/core/ticket.ts";
import type { TaskPool } from "../../src/core/swarm-contract.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";

export interface ConsumeTasksDeps {
  rooms: SwarmRooms;
  gateway: ModelGateway;
  /** Tasks one lane runs at once at most. */
  concurrency: number;
  /** Connections waiting for headers per lane (production allows 6 per invocation); 0 = no gate. */
  headerSlots: number;
  /** Lanes stop pulling new tasks this long after the invocation started. */
  pullForMs: number;
  /** Every call of the invocation must be over this long after it started (inside the 15-min wall time). */
  callsWithinMs: number;
  /** Tasks one invocation may start (its CPU allowance, across its lanes). */
  maxTasks: number;
  /** A lane waits at most this long for a retry to come due when it has nothing running. */
  idleWaitMaxMs: number;
  /** What the agents' tools reach besides the scratchpad (default: the global fetch, no webhook secret). */
  tools?: Omit<ToolEnvironment, "scratchpad">;
  /** Coalescing of outcomes into pulls (default: 5 ms — or 10% of the mean call latency, see coalesceMs — or 32 outcomes). */
  coalesce?: { ms: number; outcomes: number };
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  random?: () => number;
  schedule?: Schedule;
}

export const DEFAULT_COALESCE = { ms: 5, outcomes: 32 };

/** The long-chain pool's queue is named with this suffix (see wrangler.toml). */
const LONG_QUEUE_SUFFIX = "-long";

export async function consumeTasks(batch: MessageBatch<unknown>, deps: ConsumeTasksDeps): Promise<void> {
  const now = deps.now ?? Date.now;
  const started = now();
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const tally: LaneTally & {
    tickets: number;
    duplicate: number;
    unreadable: number;
    acked: number;
    retried: number;
    callFlushes: number;
    callFlushErrors: number;
    startNotes: number;
    startNoteErrors: number;
  } = {
    tickets: 0,
    duplicate: 0,
    unreadable: 0,
    acked: 0,
    retried: 0,
    pulls: 0,
    pullErrors: 0,
    granted: 0,
    ok: 0,
    failed: 0,
    deferred: 0,
    threw: 0,
    lost: 0,
    promoted: 0,
    released: 0,
    slots: 0,
    ttfbMs: null,
    latencyMs: null,
    callFlushes: 0,
    callFlushErrors: 0,
    startNotes: 0,
    startNoteErrors: 0,
  };
  const callStarts = createCallStarts(deps.rooms, tally);
  const journal = createCallJournal({ rooms: deps.rooms, ...(deps.schedule === undefined ? {} : { schedule: deps.schedule }), tally });
  const pool: TaskPool = batch.queue.endsWith(LONG_QUEUE_SUFFIX) ? "long" : "short";
  // Every call of the invocation ends by then: permit waits, header-slot waits and grants keep to it.
  const callsEndBy = started + deps.callsWithinMs;
  const permits: LaneContext["permits"] = {
    gateway: deps.gateway,
    denials: new Map(),
    callsEndBy,
    now,
    sleep,
    random: deps.random ?? Math.random,
    tally: { permitWaits: 0, permitWaitMs: 0, keyPoolErrors: 0 },
  };
  const context: LaneContext = {
    rooms: deps.rooms,
    permits,
    journal,
    callStarts,
    tools: deps.tools ?? toToolEnvironment(DEFAULT_TOOL_SETTINGS, fetch),
    concurrency: deps.concurrency,
    headerSlots: deps.headerSlots,
    pool,
    pullUntil: started + deps.pullForMs,
    callsEndBy,
    allowance: { tasks: deps.maxTasks },
    coalesce: deps.coalesce ?? DEFAULT_COALESCE,
    idleWaitMaxMs: deps.idleWaitMaxMs,
    now,
    sleep,
    tally,
  };

  // One lane per distinct ticket: a redelivered duplicate in the same batch is settled with it.
  const lanes = new Map<string, { ticket: Ticket; messages: Message<unknown>[] }>();
  for (const message of batch.messages) {
    const parsed = toTicket(message.body, message.id);
    if (!parsed.ok) {
      // It names no swarm or ticket: no redelivery could ever succeed, so it is acked, not cycled to the DLQ.
      tally.unreadable += 1;
      console.error(JSON.stringify({ event: "unreadable_message", queue: batch.queue, message_id: message.id, issues: parsed.issues }));
      message.ack();
      continue;
    }
    const key = `${parsed.value.swarm_id}/${parsed.value.ticket}`;
    const lane = lanes.get(key);
    if (lane === undefined) lanes.set(key, { ticket: parsed.value, messages: [message] });
    else {
      tally.duplicate += 1;
      lane.messages.push(message);
    }
  }
  tally.tickets = lanes.size;

  try {
    await Promise.all(
      [...lanes.values()].map(async ({ ticket, messages }) => {
        let reached = false;
        try {
          ({ reached } = await runLane(ticket, context));
        } catch (error) {
          // A bug, not an upstream failure: leases bring back whatever it had started.
          console.error(
            JSON.stringify({
              event: "lane_threw",
              swarm_id: ticket.swarm_id,
              ticket: ticket.ticket,
              error: toErrorMessage(error),
            }),
          );
        }
        for (const message of messages) {
          if (reached) {
            message.ack();
            tally.acked += 1;
          } else {
            // The room never heard from this lane: bring the ticket back after a back-off.
            message.retry({ delaySeconds: toQueueDelaySeconds(backoffDelayMs(message.attempts, null)) });
            tally.retried += 1;
          }
        }
      }),
    );
  } finally {
    // Its last flush, and no timer left to outlive the batch.
    await journal.stop();
  }

  console.log(JSON.stringify({ event: "task_batch", queue: batch.queue, messages: batch.messages.length, ...tally, ...permits.tally, ms: now() - started }));
}
