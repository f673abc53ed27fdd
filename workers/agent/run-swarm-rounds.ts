// One swarm's share of a consumer batch, in rounds: claim (one RPC), run the granted tasks under the
// batch's shared limiter, record (one RPC); each call is also journaled as it ends (call-journal.ts).
// Tasks the SwarmRoom wants retried after a short delay are claimed again and re-run in the same
// invocation while the inline budget allows. It settles no message itself: it writes each task's
// fate, and the caller settles messages from them.
import type { ErrorClass } from "../../src/core/error-class.ts";
import { backoffDelayMs } from "../../src/core/retry-policy.ts";
import type { ClaimedTask, ClaimResponse, RecordResponse, TaskOutcome, TaskReport, TaskRunConfig } from "../../src/core/swarm-contract.ts";
import { toCheckpoint } from "../../src/core/agent-conversation.ts";
import type { PermitContext, PermitTally } from "./call-with-permit.ts";
import { runAgentTask } from "./run-agent-task.ts";
import { createSwarmTools, type ToolEnvironment } from "./tools/swarm-tools.ts";
import type { CallJournal, JournalTally } from "./call-journal.ts";
import type { Limiter } from "./create-limiter.ts";
import type { SwarmPackets } from "./group-packets.ts";
import { allowsInlineRound } from "./inline-budget.ts";
import type { InlineBudget } from "./inline-budget.ts";
import type { TaskFate } from "./settle-messages.ts";
import type { SwarmRoomRpc, SwarmRooms } from "./swarm-rooms.ts";

export interface Tally extends PermitTally, JournalTally {
  granted: number;
  refused: number;
  ok: number;
  failed: number;
  /** Tasks handed back without a model call: no key had a permit in time. */
  deferred: number;
  /** Runs that threw instead of returning a result (a bug): left unrecorded, their messages retried. */
  threw: number;
  /** Claims after a swarm's first one in this batch, and the tasks they asked for. */
  inlineRounds: number;
  inlineRetries: number;
  /** Short retries handed back to the queue because the inline budget was spent. */
  inlineDeclined: number;
  acked: number;
  retried: number;
  /** Failed calls by error class, so one log line shows what the upstream is doing. */
  errors: Partial<Record<ErrorClass, number>>;
}

export interface RoundsContext {
  rooms: SwarmRooms;
  /** The gateway, keys and permits: shared by all swarms of the batch. */
  permits: PermitContext;
  /** Shared by all swarms of the batch: bounds the model calls in flight across it. */
  limiter: Limiter;
  /** Sends each call to the ledger as it ends, ahead of the round's record. */
  journal: CallJournal;
  /** What the agents' tools reach besides the scratchpad (network limits, the webhook secret). */
  tools: Omit<ToolEnvironment, "scratchpad">;
  /** Rounds of calls the batch needs at its concurrency; every claim's lease covers them all. */
  waves: number;
  /** A retry the SwarmRoom delays by at most this many seconds runs inside the invocation. */
  inlineRetryMaxS: number;
  budget: InlineBudget;
  /** Epoch ms. */
  batchStartedAt: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  tally: Tally;
}

/** The first recordResults and up to 3 retries, 100–800 ms apart. */
const RECORD_ATTEMPTS = 4;
const RECORD_BACKOFF = { baseMs: 200, capMs: 700 };

const SETTLED: TaskFate = { kind: "settled" };
const REDELIVER: TaskFate = { kind: "redeliver" };

/**
 * Runs the swarm's tasks round by round and writes each task's fate into `fates` as soon as it is
 * known, so that if this throws, whatever it wrote is still true and everything else is retried.
 */
export async function runSwarmRounds(
  packets: SwarmPackets,
  ctx: RoundsContext,
  fates: Map<string, TaskFate>,
  /** Called after a round that leaves short retries, before waiting for them. */
  onRoundRecorded: () => void = () => {},
): Promise<void> {
  const room = ctx.rooms(packets.swarmId);
  let taskIds = packets.taskIds;
  for (let round = 0; ; round += 1) {
    if (round > 0) {
      ctx.tally.inlineRounds += 1;
      ctx.tally.inlineRetries += taskIds.length;
    }
    const claim = await claimTasks(room, packets.swarmId, taskIds, ctx);
    if (claim === null) {
      // Nothing ran: redeliver later and claim again.
      for (const taskId of taskIds) fates.set(taskId, REDELIVER);
      return;
    }
    ctx.tally.granted += claim.granted.length;
    ctx.tally.refused += claim.refused.length;
    // A deferred task is still the message's to run; any other refusal leaves nothing to do here
    // (done, leased by another delivery, unknown, or parked: taken back by the SwarmRoom).
    for (const { taskId, reason } of claim.refused) fates.set(taskId, reason === "deferred" ? REDELIVER : SETTLED);
    if (claim.config === null || claim.granted.length === 0) return;

    const reports = await runTasks(room, claim.config, claim.granted, ctx, fates);
    if (reports.length === 0) return;
    const response = await recordWithRetry(room, packets.swarmId, reports, ctx);
    if (response === null) {
      // The outcomes are lost with this invocation. The messages are retried; the tasks' leases
      // expire and the SwarmRoom hands them out again as a new attempt, whose model call is paid
      // again. This is the one path where a call is paid twice: it is bounded because each
      // redelivery is a new attempt and max_attempts caps the attempts of a task.
      for (const report of reports) fates.set(report.taskId, REDELIVER);
      return;
    }
    const returnedAt = ctx.now();
    const short = applyActions(reports, response, fates, ctx.inlineRetryMaxS);
    if (short.length === 0) return;

    // The delay is the SwarmRoom's back-off (and the upstream's Retry-After), counted from its answer.
    const waitMs = Math.max(...short.map((s) => s.delaySeconds)) * 1_000;
    const retried = new Set(short.map((s) => s.taskId));
    const timeoutMs = Math.max(0, ...claim.granted.filter((t) => retried.has(t.taskId)).map((t) => t.timeoutS * 1_000));
    const plan = { round: round + 1, startsAt: returnedAt + waitMs, callsMs: ctx.waves * timeoutMs };
    if (!allowsInlineRound(ctx.budget, ctx.batchStartedAt, plan)) {
      // Their fates stay `retry` with the SwarmRoom's delay: the queue redelivers them.
      ctx.tally.inlineDeclined += short.length;
      return;
    }
    onRoundRecorded();
    await ctx.sleep(Math.max(0, plan.startsAt - ctx.now()));
    taskIds = short.map((s) => s.taskId);
  }
}

async function claimTasks(room: SwarmRoomRpc, swarmId: string, taskIds: string[], ctx: RoundsContext): Promise<ClaimResponse | null> {
  try {
    return await room.claim(taskIds, { waves: ctx.waves });
  } catch (error) {
    logRpcFailure("claim", swarmId, error);
    return null;
  }
}

/**
 * Runs each granted task's agent loop under the shared limiter; its permits are taken inside the
 * slot, so a task waiting for a key holds a slot (the concurrency bound stays one bound; a task's
 * tool calls hold it too). A run that throws (it never should) is logged and left out of the
 * reports: its outcome is unknown, so its task is not recorded and its message is retried (its
 * journaled calls and checkpoint stay: the retry resumes after its last finished turn).
 */
async function runTasks(
  room: SwarmRoomRpc,
  config: TaskRunConfig,
  granted: ClaimedTask[],
  ctx: RoundsContext,
  fates: Map<string, TaskFate>,
): Promise<TaskReport[]> {
  const tools = createSwarmTools(config.tools, config.httpAllowlist, config.tenant, { ...ctx.tools, scratchpad: (request) => room.scratchpad(request) });
  const reports = await Promise.all(
    granted.map((task) =>
      ctx.limiter.run(async (): Promise<TaskReport | null> => {
        let report: TaskReport;
        try {
          report = await runAgentTask(config, task, {
            permits: ctx.permits,
            tools,
            // Each call is journaled the moment it ends: a crash before the round's record then
            // loses no usage the upstream billed (the record carries it again; rows are deduped).
            onCall: (record) => ctx.journal.append(config.swarmId, { taskId: task.taskId, attempt: task.attempt, calls: [record] }),
            onCheckpoint: (state) => ctx.journal.checkpoint(config.swarmId, task.taskId, task.attempt, toCheckpoint(state)),
            callsEndBy: Math.min(ctx.permits.callsEndBy, task.leaseUntil),
            now: ctx.now,
          });
        } catch (error) {
          ctx.tally.threw += 1;
          fates.set(task.taskId, REDELIVER);
          console.error(
            JSON.stringify({ event: "task_run_threw", swarm_id: config.swarmId, task_id: task.taskId, attempt: task.attempt, error: messageOf(error) }),
          );
          return null;
        }
        countOutcome(ctx.tally, report.outcome);
        return report;
      }),
    ),
  );
  return reports.filter((report) => report !== null);
}

async function recordWithRetry(room: SwarmRoomRpc, swarmId: string, reports: TaskReport[], ctx: RoundsContext): Promise<RecordResponse | null> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      // The journal holds these calls back while the record carries them, and takes them back if it fails.
      return await ctx.journal.carry(swarmId, reports, () => room.recordResults(reports));
    } catch (error) {
      // recordResults is idempotent by (task, attempt), so trying again is safe.
      logRpcFailure("recordResults", swarmId, error, attempt);
      if (attempt >= RECORD_ATTEMPTS) return null;
      await ctx.sleep(100 + backoffDelayMs(attempt, null, RECORD_BACKOFF));
    }
  }
}

/**
 * Writes each reported task's fate from the SwarmRoom's actions (a task it said nothing about is
 * redelivered, never acked) and returns the retries short enough to run inline.
 */
function applyActions(
  reports: TaskReport[],
  response: RecordResponse,
  fates: Map<string, TaskFate>,
  inlineRetryMaxS: number,
): { taskId: string; delaySeconds: number }[] {
  const actions = new Map(response.actions.map((a) => [a.taskId, a]));
  const short: { taskId: string; delaySeconds: number }[] = [];
  for (const { taskId } of reports) {
    const action = actions.get(taskId);
    if (action === undefined) {
      fates.set(taskId, REDELIVER);
    } else if (action.action === "ack") {
      fates.set(taskId, SETTLED);
    } else {
      fates.set(taskId, { kind: "retry", delaySeconds: action.delaySeconds });
      if (action.delaySeconds <= inlineRetryMaxS) short.push({ taskId, delaySeconds: action.delaySeconds });
    }
  }
  return short;
}

function countOutcome(tally: Tally, outcome: TaskOutcome): void {
  if (outcome.kind === "succeeded") {
    tally.ok += 1;
  } else if (outcome.kind === "deferred") {
    tally.deferred += 1;
  } else {
    tally.failed += 1;
    tally.errors[outcome.class] = (tally.errors[outcome.class] ?? 0) + 1;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function logRpcFailure(rpc: string, swarmId: string, error: unknown, attempt = 1): void {
  console.error(JSON.stringify({ event: "swarm_room_rpc_failed", rpc, swarm_id: swarmId, attempt, error: messageOf(error) }));
}
