// The production capacity model of the dispatch: for a window W and an upstream's latency and time
// to headers, how many lane executors a swarm runs, how many connections they hold, how many
// requests a second the SwarmRoom takes, and what 1,000 tasks cost in Durable Object requests,
// duration and rows written. Pure arithmetic over the rules the dispatch follows (lane-sizing.ts)
// and the rows the schemas write. No I/O.
import {
  HEADER_SLOTS_PER_INVOCATION,
  MAX_TICKETS_PER_SWARM,
  ROOM_PULLS_PER_S,
  BASE_COALESCE_MAX_MS,
  smallLaneCoalesceMaxMs,
  toExecutorCount,
  toPullPaceMs,
} from "./lane-sizing.ts";

/**
 * Workers Paid prices (developers.cloudflare.com/durable-objects/platform/pricing/): $0.15 per
 * million Durable Object requests, $12.50 per million GB-s of duration, billed at 128 MB an object
 * while it is active (awaiting a fetch included); SQLite-backed Durable Object storage "Rows written
 * … $1.00 / million" (index entries count: "Deletes are counted as rows written", "Each setAlarm() is
 * billed as a single row written"), as are D1's (developers.cloudflare.com/d1/platform/pricing/),
 * each after 50 million a month included; Queues $0.40 per million operations, a message costing 3
 * (write, read, delete: developers.cloudflare.com/queues/platform/pricing/). The monthly allowances
 * are left out: the model prices the margin.
 */
export const PRICES = {
  doRequestUsd: 0.15 / 1e6,
  doGbSecondUsd: 12.5 / 1e6,
  doGb: 0.128,
  rowWrittenUsd: 1 / 1e6,
  queueOperationUsd: 0.4 / 1e6,
  queueOpsPerMessage: 3,
};

/** Counted operations (any number of tasks), priced with PRICES: what the platform bills for them. */
export function priceOperations(ops: { doRequests: number; rowsWritten: number; queueMessages: number }): {
  doRequestsUsd: number;
  rowsUsd: number;
  queueUsd: number;
} {
  return {
    doRequestsUsd: ops.doRequests * PRICES.doRequestUsd,
    rowsUsd: ops.rowsWritten * PRICES.rowWrittenUsd,
    queueUsd: ops.queueMessages * PRICES.queueOpsPerMessage * PRICES.queueOperationUsd,
  };
}

/**
 * Rows a task writes in its SwarmRoom (schema v18; src/durable/swarm-room-schema.test.ts holds each
 * write's count): its row (3: the row, its id's key, tasks_by_state), its grant (2: the row and its
 * tasks_by_state entry), its call's note before send (1) and ledger row (2: the row and its call_id
 * key), the note's delete (1), its end (2), and its start from standby (1), which is nearly every
 * task's once lanes hold standby. `npm run bench` measures 12.3 a task with the meters' row per
 * request, tickets and the window's changes (1,000 × lognormal 300/1500, W = 100, both header cases).
 */
export const ROOM_ROWS_PER_TASK = 12;
/** The room stores its meters (swarm-meters.ts) in one row at the end of every request it serves. */
export const ROOM_ROWS_PER_REQUEST = 1;
/** D1 rows a call's ledger row writes (migrations/): the row, its call_id key, ledger_by_swarm, ledger_by_tenant_time. */
export const LEDGER_ROWS_PER_CALL = 4;
/** An executor's storage (lane-executor.ts), at most: its ticket, its alarm, and deleteAll at its end deleting both. */
const ROWS_PER_EXECUTOR_START = 4;

/** A lane executor's lane ends this long into its alarm (AGENT_PULL_FOR_S), and a fresh ticket replaces it. */
const EXECUTOR_LIFETIME_S = 300;
/** Requests that start an executor: the consumer's `start`, the alarm, the lane's first and final pulls. */
const REQUESTS_PER_EXECUTOR = 4;

export interface CapacityInput {
  /** The swarm's window (tasks in flight). */
  window: number;
  /** Mean call latency, ms. */
  latencyMs: number;
  /** Mean time to response headers, ms (= latencyMs when headers come with the answer). */
  ttfbMs: number;
  /** Tasks one lane runs at once at most (AGENT_CONCURRENCY). */
  concurrency: number;
  /** Tasks in the swarm: its executors' starts are shared by all of them. */
  tasks: number;
}

export interface Capacity {
  executors: number;
  /** Calls the executors keep in flight (at most the window). */
  inFlight: number;
  /** Connections waiting for headers at once, across executors (6 each at most). */
  connectionsWaiting: number;
  tasksPerS: number;
  /** Pulls a second the room takes from all executors (each paced to ROOM_PULLS_PER_S in all). */
  roomPullsPerS: number;
  /** Durable Object requests per 1,000 tasks: pulls, executor starts, nothing per call. */
  doRequestsPer1kTasks: number;
  /** Executor duration per 1,000 tasks, GB-s (each is active for its whole lane). */
  executorGbSecondsPer1kTasks: number;
  queueMessagesPer1kTasks: number;
  /** Rows written per 1,000 tasks (one call each): the SwarmRoom's (its tasks' and its requests' meters), D1's ledger, the executors'. */
  rowsWrittenPer1kTasks: { room: number; d1: number; executors: number };
  usdPer1kTasks: number;
}

export function toCapacity(input: CapacityInput): Capacity {
  const timing = { ttfbMs: input.ttfbMs, latencyMs: input.latencyMs };
  const executors = toExecutorCount({ window: input.window, concurrency: input.concurrency, headerSlots: HEADER_SLOTS_PER_INVOCATION, timing });
  const carried = Math.min(input.concurrency, Math.floor((HEADER_SLOTS_PER_INVOCATION * Math.max(input.latencyMs, input.ttfbMs)) / Math.max(1, input.ttfbMs)));
  const inFlight = Math.min(input.window, executors * carried, MAX_TICKETS_PER_SWARM * carried);
  const tasksPerS = (inFlight * 1_000) / Math.max(1, input.latencyMs);
  const connectionsWaiting = Math.min(
    executors * HEADER_SLOTS_PER_INVOCATION,
    Math.ceil((inFlight * Math.min(input.ttfbMs, input.latencyMs)) / Math.max(1, input.latencyMs)),
  );
  // Each executor pulls once its outcomes have waited for company (a gate-bound lane up to
  // SMALL_LANE_COALESCE_MAX_MS, or one call up to LONG_CALL_COALESCE_MAX_MS when calls are longer,
  // or two latencies; a wide one up to BASE_COALESCE_MAX_MS or 32 outcomes), no sooner than the
  // room's pace, and carries at least one outcome a pull.
  const coalesce =
    carried < Math.min(32, input.concurrency)
      ? Math.min(smallLaneCoalesceMaxMs(input.latencyMs), 2 * input.latencyMs)
      : Math.max(Math.min(BASE_COALESCE_MAX_MS, input.latencyMs / 10), (32 * input.latencyMs) / Math.max(1, carried));
  const pullEveryMs = Math.max(1, toPullPaceMs(executors), coalesce);
  const roomPullsPerS = Math.min((executors * 1_000) / pullEveryMs, ROOM_PULLS_PER_S, tasksPerS);
  const swarmSecondsPer1k = 1_000 / tasksPerS;
  const swarmSeconds = Math.max(input.latencyMs / 1_000, input.tasks / tasksPerS);
  // Each executor starts once, and again each time its lane reaches AGENT_PULL_FOR_S.
  const startsPer1k = (executors * Math.ceil(swarmSeconds / EXECUTOR_LIFETIME_S) * 1_000) / Math.max(1, input.tasks);
  const doRequestsPer1kTasks = roomPullsPerS * swarmSecondsPer1k + startsPer1k * REQUESTS_PER_EXECUTOR;
  const executorGbSecondsPer1kTasks = executors * swarmSecondsPer1k * PRICES.doGb;
  const queueMessagesPer1kTasks = startsPer1k;
  const rowsWrittenPer1kTasks = {
    room: 1_000 * ROOM_ROWS_PER_TASK + roomPullsPerS * swarmSecondsPer1k * ROOM_ROWS_PER_REQUEST,
    d1: 1_000 * LEDGER_ROWS_PER_CALL,
    executors: startsPer1k * ROWS_PER_EXECUTOR_START,
  };
  const operations = priceOperations({
    doRequests: doRequestsPer1kTasks,
    rowsWritten: rowsWrittenPer1kTasks.room + rowsWrittenPer1kTasks.d1 + rowsWrittenPer1kTasks.executors,
    queueMessages: queueMessagesPer1kTasks,
  });
  const usdPer1kTasks = operations.doRequestsUsd + operations.rowsUsd + operations.queueUsd + executorGbSecondsPer1kTasks * PRICES.doGbSecondUsd;
  return {
    executors,
    inFlight,
    connectionsWaiting,
    tasksPerS,
    roomPullsPerS,
    doRequestsPer1kTasks,
    executorGbSecondsPer1kTasks,
    queueMessagesPer1kTasks,
    rowsWrittenPer1kTasks,
    usdPer1kTasks,
  };
}
