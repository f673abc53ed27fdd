// The task-queue handler (short and long queues alike): each message is a ticket, and each ticket
// brings one lane that pulls its swarm's tasks until the SwarmRoom has none left for it
// (run-lane.ts). Where the lane runs is the host's choice (AGENT_LANE_HOST):
// - "executor" (default): the ticket is handed to a lane executor, a Durable Object of its own
//   (lane-executor.ts), and acked once it holds it. The batch lasts milliseconds, so Queues can
//   scale consumers between batches, and each lane has an invocation's connections to itself.
// - "consumer": the batch's lanes run here, sharing this invocation's limits, and each ticket is
//   acked once its lane has ended and recorded what it started.
import { createInvocation, flushSpans, runTicketLane, type LaneHostDeps } from "./lane-invocation.ts";
import type { LaneExecutors } from "./lane-executors.ts";
import { backoffDelayMs, toQueueDelaySeconds } from "../../src/core/retry-policy.ts";
import { toTicket, type Ticket } from "../../src/core/ticket.ts";
import type { TaskPool } from "../../src/core/swarm-contract.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";

export { DEFAULT_COALESCE } from "./lane-invocation.ts";

export type LaneHost = "executor" | "consumer";

export interface ConsumeTasksDeps extends LaneHostDeps {
  /** Where a ticket's lane runs (AGENT_LANE_HOST; absent: here, "consumer"). */
  host?: LaneHost;
  /** The lane executors (host "executor"). */
  executors?: LaneExecutors;
}

/** The long-chain pool's queue is named with this suffix (see wrangler.toml). */
const LONG_QUEUE_SUFFIX = "-long";

export async function consumeTasks(batch: MessageBatch<unknown>, deps: ConsumeTasksDeps): Promise<void> {
  const pool: TaskPool = batch.queue.endsWith(LONG_QUEUE_SUFFIX) ? "long" : "short";
  const { lanes, unreadable, duplicate } = toLanes(batch);
  if (deps.host === "executor") {
    await handOff(batch.queue, pool, lanes, deps);
    return;
  }

  const invocation = createInvocation(deps, pool, lanes.size);
  let acked = unreadable;
  let retried = 0;
  try {
    await Promise.all(
      [...lanes.values()].map(async ({ ticket, messages }) => {
        const reached = await runTicketLane(invocation, ticket);
        for (const message of messages) {
          if (reached) {
            message.ack();
            acked += 1;
          } else {
            // The room never heard from this lane: bring the ticket back after a back-off.
            message.retry({ delaySeconds: toQueueDelaySeconds(backoffDelayMs(message.attempts, null)) });
            retried += 1;
          }
        }
      }),
    );
  } finally {
    // Its last flush, and no timer left to outlive the batch.
    await invocation.journal.stop();
  }
  // Awaited at the batch's end (bounded by OTEL_EXPORTER_OTLP_TIMEOUT; a failure is counted, not
  // retried): the messages are already settled, so a slow collector delays no task.
  const spans = await flushSpans(invocation);
  const now = deps.now ?? Date.now;
  console.log(
    JSON.stringify({
      event: "task_batch",
      host: "consumer",
      queue: batch.queue,
      messages: batch.messages.length,
      ...invocation.tally,
      ...spans,
      duplicate,
      unreadable,
      acked,
      retried,
      ...invocation.permitTally,
      ms: now() - invocation.started,
    }),
  );
}

/** Each ticket goes to its executor; acked once the executor holds it, retried when it could not be reached. */
async function handOff(
  queue: string,
  pool: TaskPool,
  lanes: ReadonlyMap<string, { ticket: Ticket; messages: Message<unknown>[] }>,
  deps: ConsumeTasksDeps,
): Promise<void> {
  if (deps.executors === undefined) throw new Error('AGENT_LANE_HOST is "executor" but the agent has no LANE_EXECUTOR binding');
  const executors = deps.executors;
  const tally = { tickets: lanes.size, started: 0, duplicate: 0, retried: 0 };
  await Promise.all(
    [...lanes.values()].map(async ({ ticket, messages }) => {
      try {
        const { started } = await executors.start(ticket, pool);
        if (started) tally.started += 1;
        else tally.duplicate += 1;
        for (const message of messages) message.ack();
      } catch (error) {
        console.error(JSON.stringify({ event: "executor_start_failed", swarm_id: ticket.swarm_id, ticket: ticket.ticket, error: toErrorMessage(error) }));
        for (const message of messages) message.retry({ delaySeconds: toQueueDelaySeconds(backoffDelayMs(message.attempts, null)) });
        tally.retried += messages.length;
      }
    }),
  );
  console.log(JSON.stringify({ event: "task_batch", host: "executor", queue, messages: lanes.size, ...tally }));
}

/** One lane per distinct ticket: a redelivered duplicate in the same batch is settled with it. */
function toLanes(batch: MessageBatch<unknown>): {
  lanes: Map<string, { ticket: Ticket; messages: Message<unknown>[] }>;
  unreadable: number;
  duplicate: number;
} {
  const lanes = new Map<string, { ticket: Ticket; messages: Message<unknown>[] }>();
  let unreadable = 0;
  let duplicate = 0;
  for (const message of batch.messages) {
    const parsed = toTicket(message.body, message.id);
    if (!parsed.ok) {
      // It names no swarm or ticket: no redelivery could ever succeed, so it is acked, not cycled to the DLQ.
      unreadable += 1;
      console.error(JSON.stringify({ event: "unreadable_message", queue: batch.queue, message_id: message.id, issues: parsed.issues }));
      message.ack();
      continue;
    }
    const key = `${parsed.value.swarm_id}/${parsed.value.ticket}`;
    const lane = lanes.get(key);
    if (lane === undefined) lanes.set(key, { ticket: parsed.value, messages: [message] });
    else {
      duplicate += 1;
      lane.messages.push(message);
    }
  }
  return { lanes, unreadable, duplicate };
}
