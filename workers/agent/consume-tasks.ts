// The task-queue handler: claims each swarm's tasks (one RPC), runs each granted task as one model
// call, records the outcomes (one RPC), then acks or retries each message as the SwarmRoom says.
// It never decides a task's fate itself and never acks a message whose outcome is not recorded.
import type { ErrorClass } from "../../src/core/error-class.ts";
import type { ClaimedTask, ClaimResponse, RecordResponse, TaskReport, TaskRunConfig } from "../../src/core/swarm-contract.ts";
import { mapWithConcurrency } from "../../src/core/map-with-concurrency.ts";
import { backoffDelayMs, toQueueDelaySeconds } from "../../src/core/retry-policy.ts";
import type { ModelCallResult, ModelClient } from "../../src/model/model-client.ts";
import { groupPackets } from "./group-packets.ts";
import type { PacketMessage, SwarmPackets } from "./group-packets.ts";
import type { SwarmRoomRpc, SwarmRooms } from "./swarm-rooms.ts";

export interface ConsumeTasksDeps {
  rooms: SwarmRooms;
  model: ModelClient;
  /** Model calls in flight at once, across the whole batch. */
  concurrency: number;
  /** Waits between attempts at recordResults; tests pass a fast one. */
  sleep?: (ms: number) => Promise<void>;
}

/** The first recordResults and up to 3 retries, 100–800 ms apart. */
const RECORD_ATTEMPTS = 4;
const RECORD_BACKOFF = { baseMs: 200, capMs: 700 };

interface Tally {
  granted: number;
  refused: number;
  ok: number;
  failed: number;
  acked: number;
  retried: number;
  /** Failed calls by error class, so one log line shows what the upstream is doing. */
  errors: Partial<Record<ErrorClass, number>>;
}

interface ClaimedSwarm {
  packets: SwarmPackets;
  room: SwarmRoomRpc;
  config: TaskRunConfig;
  granted: ClaimedTask[];
  refused: string[];
  reports: TaskReport[];
}

export async function consumeTasks(batch: MessageBatch<unknown>, deps: ConsumeTasksDeps): Promise<void> {
  const started = Date.now();
  const tally: Tally = { granted: 0, refused: 0, ok: 0, failed: 0, acked: 0, retried: 0, errors: {} };
  const { swarms, unreadable } = groupPackets(batch);

  // Tasks beyond the concurrency wait for a slot: the lease must cover every round of calls.
  const waves = Math.max(1, Math.ceil(swarms.reduce((n, s) => n + s.taskIds.length, 0) / deps.concurrency));
  const claimed = (await Promise.all(swarms.map((packets) => claimSwarm(packets, deps.rooms, waves, tally)))).filter(
    (swarm) => swarm !== null,
  );

  // All granted tasks of the batch share one concurrency bound; a swarm records as soon as its own
  // last task ends, so its leases are not held while another swarm's slower calls finish.
  const recordings: Promise<void>[] = [];
  const work = claimed.flatMap((swarm) => swarm.granted.map((task) => ({ swarm, task })));
  await mapWithConcurrency(work, deps.concurrency, async ({ swarm, task }) => {
    const result = await deps.model.complete({
      model: swarm.config.model,
      system: swarm.config.system,
      prompt: task.prompt,
      maxOutputTokens: swarm.config.limits.max_output_tokens,
      timeoutMs: swarm.config.limits.timeout_s * 1_000,
      responseFormat: swarm.config.responseFormat,
    });
    if (result.ok) {
      tally.ok += 1;
    } else {
      tally.failed += 1;
      tally.errors[result.error.class] = (tally.errors[result.error.class] ?? 0) + 1;
    }
    swarm.reports.push(toTaskReport(swarm.config, task, result));
    if (swarm.reports.length === swarm.granted.length) recordings.push(recordSwarm(swarm, deps, tally));
  });
  await Promise.all(recordings);

  console.log(
    JSON.stringify({
      event: "task_batch",
      queue: batch.queue,
      messages: batch.messages.length,
      unreadable,
      swarms: swarms.length,
      ...tally,
      ms: Date.now() - started,
    }),
  );
}

/** Claims the swarm's tasks; settles its messages itself and returns null when nothing is to run. */
async function claimSwarm(packets: SwarmPackets, rooms: SwarmRooms, waves: number, tally: Tally): Promise<ClaimedSwarm | null> {
  const room = rooms(packets.swarmId);
  let claim: ClaimResponse;
  try {
    claim = await room.claim(packets.taskIds, { waves });
  } catch (error) {
    // Nothing ran: redeliver later and claim again.
    logRpcFailure("claim", packets.swarmId, error);
    retryAll(packets.messages, tally);
    return null;
  }
  tally.granted += claim.granted.length;
  tally.refused += claim.refused.length;
  // A deferred task is still the message's to run: leaving it out of `refused` retries its message.
  const refused = claim.refused.filter((r) => r.reason !== "deferred").map((r) => r.taskId);
  if (claim.config === null || claim.granted.length === 0) {
    // An unknown swarm, or every task finished or leased elsewhere: no model call, nothing to record.
    settle(packets.messages, refused, new Map(), tally);
    return null;
  }
  return { packets, room, config: claim.config, granted: claim.granted, refused, reports: [] };
}

async function recordSwarm(swarm: ClaimedSwarm, deps: ConsumeTasksDeps, tally: Tally): Promise<void> {
  const response = await recordWithRetry(swarm, deps.sleep ?? sleep);
  if (response === null) {
    // The outcomes are lost with this invocation. The messages are retried; the tasks' leases
    // expire and the SwarmRoom hands them out again as a new attempt, whose model call is paid
    // again. This is the one path where a call is paid twice: it is bounded because each
    // redelivery is a new attempt and max_attempts caps the attempts of a task.
    retryAll(swarm.packets.messages, tally);
    return;
  }
  const actions = new Map(response.actions.map((a) => [a.taskId, a]));
  settle(swarm.packets.messages, swarm.refused, actions, tally);
}

async function recordWithRetry(swarm: ClaimedSwarm, wait: (ms: number) => Promise<void>): Promise<RecordResponse | null> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await swarm.room.recordResults(swarm.reports);
    } catch (error) {
      // recordResults is idempotent by (task, attempt), so trying again is safe.
      logRpcFailure("recordResults", swarm.packets.swarmId, error, attempt);
      if (attempt >= RECORD_ATTEMPTS) return null;
      await wait(100 + backoffDelayMs(attempt, null, RECORD_BACKOFF));
    }
  }
}

/**
 * Acks a message only when the SwarmRoom accounted for each of its tasks: refused by the claim, or
 * acked after recording. Any `retry` (or a task it said nothing about) retries the message, with
 * the longest delay the SwarmRoom asked for.
 */
function settle(
  messages: PacketMessage[],
  refused: readonly string[],
  actions: ReadonlyMap<string, { action: "ack" | "retry"; delaySeconds: number }>,
  tally: Tally,
): void {
  const done = new Set(refused);
  for (const { message, taskIds } of messages) {
    let retry = false;
    let delaySeconds = 0;
    for (const taskId of taskIds) {
      if (done.has(taskId)) continue;
      const action = actions.get(taskId);
      if (action === undefined) {
        retry = true;
        delaySeconds = Math.max(delaySeconds, retryDelaySeconds(message));
      } else if (action.action === "retry") {
        retry = true;
        delaySeconds = Math.max(delaySeconds, action.delaySeconds);
      }
    }
    if (retry) {
      message.retry({ delaySeconds });
      tally.retried += 1;
    } else {
      message.ack();
      tally.acked += 1;
    }
  }
}

function retryAll(messages: PacketMessage[], tally: Tally): void {
  for (const { message } of messages) {
    message.retry({ delaySeconds: retryDelaySeconds(message) });
    tally.retried += 1;
  }
}

function retryDelaySeconds(message: Message<unknown>): number {
  return toQueueDelaySeconds(backoffDelayMs(message.attempts, null));
}

function toTaskReport(config: TaskRunConfig, task: ClaimedTask, result: ModelCallResult): TaskReport {
  return {
    taskId: task.taskId,
    attempt: task.attempt,
    outcome: result.ok
      ? { kind: "succeeded", output: result.text, finishReason: result.finishReason }
      : { kind: "failed", ...result.error },
    calls: [
      {
        turn: 1,
        model: config.model,
        usage: result.usage,
        latencyMs: result.latencyMs,
        status: result.ok ? "ok" : "error",
        errorClass: result.ok ? null : result.error.class,
        startedAt: result.startedAt,
      },
    ],
  };
}

function logRpcFailure(rpc: string, swarmId: string, error: unknown, attempt = 1): void {
  const message = error instanceof Error ? error.message : String(error);
  console.error(JSON.stringify({ event: "swarm_room_rpc_failed", rpc, swarm_id: swarmId, attempt, error: message }));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
